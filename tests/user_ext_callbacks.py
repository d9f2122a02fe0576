"""User callbacks for tests/test_user_extensions.py: one whose state_dict() returns what no checkpoint holds (a
set), and one whose only method is no hook (Stable-Baselines3-like ``on_update``)."""
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


class NoHook(Callback):
    """Counts updates in a method no trainer calls."""

    def __init__(self, tag="x"):
        self.tag, self.n = tag, 0

    def on_update(self, trainer, losses):
        self.n += 1
