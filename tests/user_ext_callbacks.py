"""A user's callback whose state_dict() returns what no checkpoint holds (a set), for tests/test_user_extensions.py."""
from canter.callbacks import Callback


class SetState(Callback):
    """Keeps the steps of its updates in a set, and gives the set itself as its state."""

    def __init__(self):
        self.seen = set()

    def after_update(self, trainer, losses):
        self.seen.add(trainer.step)

    def state_dict(self):
        return {"seen": self.seen}

    def load_state_dict(self, state):
        self.seen = set(state["seen"])
