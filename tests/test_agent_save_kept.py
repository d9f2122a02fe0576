"""An agent kept from a ``canter.make_trainer`` trainer saves after that trainer is gone (SB3's ``model.save``)."""
import gc
import weakref

import numpy as np

import canter
from canter.trainers import OnPolicyTrainer


def test_an_agent_saves_before_its_trainer_trained_once_the_trainer_is_gone(tmp_path):
    """``canter.make_trainer(...).agent.save(path)`` raised "this agent carries no run metadata": the agent only held
    a weak reference to its trainer, freed at once. It now writes the metadata the trainer left on it (step 0),
    without keeping the trainer (and its envs) alive."""
    trainer = canter.make_trainer("ppo", "CartPole-v1", max_steps=64, n_envs=2, n_steps=32, batch_size=64)
    agent, gone = trainer.agent, weakref.ref(trainer)
    del trainer
    gc.collect()
    assert gone() is None
    agent.save(tmp_path / "agent")
    loaded = canter.load(tmp_path / "agent")
    assert loaded.metadata["step"] == 0 and loaded.metadata["config"]["algo"] == "ppo"
    assert loaded.metadata["trainer"]["iteration"] == 0
    obs = np.zeros((3, 4), dtype=np.float32)
    np.testing.assert_array_equal(loaded.predict(obs), agent.predict(obs))


def test_an_agent_saves_its_last_iterations_metadata_once_its_trainer_is_gone(tiny_ppo, tmp_path):
    """After training iterations (the loop left early, the trainer never closed) the saved metadata is the last
    iteration's: its step and counters, not the step at which the agent was made."""
    trainer = canter.make_trainer("ppo", "CartPole-v1", **tiny_ppo)
    for record in trainer():
        if record.step >= 256:
            break
    agent, step, gone = trainer.agent, trainer.step, weakref.ref(trainer)
    del trainer, record
    gc.collect()
    assert gone() is None and step == 256
    agent.save(tmp_path / "agent")
    meta = canter.load(tmp_path / "agent").metadata
    assert meta["step"] == meta["trainer"]["step"] == 256 and meta["trainer"]["iteration"] == 2
    assert meta["observation_space"]["type"] == "Box" and meta["git_commit"] == canter.utils.git_commit()


def test_a_new_trainer_of_a_kept_agent_drops_the_metadata_its_last_trainer_left(tiny_ppo, tmp_path):
    """A trainer built by hand around a kept agent saved, while it trained the agent, the metadata the agent's
    previous, gone trainer had left (its step 256, not this one's 128). The snapshot is dropped when a trainer takes
    the agent; the save (refused in one line before 2026-11-28, as the hand-built trainer had no config) writes this
    trainer's own run config, algorithm config and step."""
    first = canter.make_trainer("ppo", "CartPole-v1", **tiny_ppo)
    for record in first():
        if record.step >= 256:
            break
    agent = first.agent
    del first, record
    gc.collect()
    other = canter.make_trainer("ppo", "CartPole-v1", **{**tiny_ppo, "max_steps": 128})
    trainer = OnPolicyTrainer(agent, other.env, None, other.run)
    for _ in trainer():
        pass
    assert trainer.step == 128
    agent.save(tmp_path / "agent")
    meta = canter.load(tmp_path / "agent").metadata
    assert meta["step"] == meta["trainer"]["step"] == 128 and meta["config"]["max_steps"] == 128
