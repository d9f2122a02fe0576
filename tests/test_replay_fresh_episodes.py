"""A resume that cannot restore the env starts fresh episodes: the replay buffer ends its running ones there, also
where the fresh first observations equal the stored next ones (it compared them and took them for the same episode)."""
from __future__ import annotations

import numpy as np
import pytest

import canter
from canter.api import resume_trainer
from canter.data.replay import ReplayBuffer
from canter.data.sharded import ShardedReplay


def test_new_episodes_puts_a_boundary_before_an_equal_observation():
    buf = ReplayBuffer(20, (1,), (), n_envs=1, n_step=3, gamma=1.0)
    same = np.zeros((1, 1), np.float32)
    for reward in (1.0, 2.0):
        buf.add(same, np.zeros(1), np.array([reward]), same, np.zeros(1, bool))
    buf.new_episodes()  # the env was reset: a new episode whose first observation equals the stored next one
    buf.add(same, np.zeros(1), np.array([100.0]), same, np.zeros(1, bool))
    assert buf.valid[:4, 0].tolist() == [True, True, False, True]  # row 2: the boundary, no transition
    assert buf.transitions(np.array([0])).rewards.tolist() == [3.0]  # the n-step sum stops at the old episode's end
    buf.add(same, np.zeros(1), np.array([5.0]), same, np.zeros(1, bool))
    assert buf.valid[:5, 0].tolist() == [True, True, False, True, True]  # only the next add: then one stream again


def test_a_resume_with_fresh_episodes_ends_the_running_hindsight_episode(tmp_path):
    """StillGoal-v0 (tests/goal_env.py): 8-step episodes, every observation zeros, its state not saved. Stopped
    after 5 steps, the resumed run resets the env; the 5 stored steps were one episode with the fresh one's (12
    steps, longer than the env's episodes), so hindsight goals crossed from one into the other."""
    common = dict(env="goal_env:StillGoal-v0", seed=0, eval_every=0, quiet=True, her_goals=2, learning_starts=3,
                  batch_size=4, train_freq=1, net_arch=[8], n_envs=1, tensorboard=False)
    canter.train("dqn", max_steps=5, run_dir=tmp_path / "run", checkpoint_every=5, **common)
    trainer = resume_trainer(tmp_path / "run", max_steps=12)
    for _ in trainer():
        pass
    trainer.close()
    assert trainer.resume_exact is False
    buf = trainer.buffer
    assert buf.ep_end[:5, 0].tolist() == [4] * 5  # the stopped episode ends at its last stored step
    assert not buf.valid[5, 0]  # the boundary row holding its next observation
    assert buf.ep_start[6:13, 0].tolist() == [6] * 7  # the fresh episode starts after it


def test_an_ape_x_replay_ends_every_shards_running_episodes():
    shards = [ReplayBuffer(20, (1,), (), n_envs=1) for _ in range(2)]
    same = np.zeros((1, 1), np.float32)
    for shard in shards:
        shard.add(same, np.zeros(1), np.zeros(1), same, np.zeros(1, bool))
    ShardedReplay(shards).new_episodes()
    for shard in shards:
        shard.add(same, np.zeros(1), np.zeros(1), same, np.zeros(1, bool))
        assert shard.valid[:3, 0].tolist() == [True, False, True]


@pytest.mark.filterwarnings("ignore:learning_starts")  # collection only
def test_a_replacement_explorers_first_rollout_ends_its_shards_running_episode():
    """Ape-X: a replacement explorer (Ray's, after a failure) starts fresh episodes; its first rollout is flagged
    ``fresh_episodes`` (here on an in-process pool). Its shard compared observations only, and StillGoal-v0's are
    all equal, so the replacement's episodes went on the dead explorer's."""
    from canter.config import resolve_config
    from canter.distributed.explorer import Explorer
    from canter.distributed.pool import LocalPool
    from canter.distributed.trainers import ApeXTrainer
    from canter.envs import make_vec_env

    run, cfg = resolve_config("dqn", "goal_env:StillGoal-v0", hparams={"her_goals": 2, "learning_starts": 100,
                                                                       "train_freq": 4, "net_arch": [8]},
                              n_envs=1, max_steps=12, eval_every=0, tensorboard=False)
    env = make_vec_env(run.env, run.n_envs)
    agent = canter.make_agent(run, cfg, env.single_observation_space, env.single_action_space)
    trainer = ApeXTrainer(agent, LocalPool(Explorer(agent, env, seed=0)), None, run)
    wait, calls = trainer.pool.wait, []

    def second_is_fresh():
        slot, result = wait()
        calls.append(slot)
        if len(calls) == 2:
            result["fresh_episodes"] = True
        return slot, result

    trainer.pool.wait = second_is_fresh
    list(trainer())
    trainer.close()
    shard = trainer.buffer.shards[0]
    assert shard.ep_end[:4, 0].tolist() == [3] * 4 and not shard.valid[4, 0]  # rollouts of 4 steps
    assert shard.ep_start[5:9, 0].tolist() == [5] * 4


def test_a_pending_new_episodes_boundary_survives_save_and_load(tmp_path):
    # a resume with fresh episodes, then a checkpoint before the next add: the boundary still comes after loading
    buf = ReplayBuffer(20, (1,), (), n_envs=1, n_step=3, gamma=1.0)
    same = np.zeros((1, 1), np.float32)
    for reward in (1.0, 2.0):
        buf.add(same, np.zeros(1), np.array([reward]), same, np.zeros(1, bool))
    buf.new_episodes()
    path = buf.save(tmp_path / "replay.npz")
    for loaded in (ReplayBuffer(20, (1,), (), n_envs=1, n_step=3, gamma=1.0) for _ in range(2)):
        if path.exists():
            loaded.load(path)
            path.unlink()
        else:
            loaded.load_state_dict(buf.state_dict())
        loaded.add(same, np.zeros(1), np.array([100.0]), same, np.zeros(1, bool))
        assert loaded.valid[:4, 0].tolist() == [True, True, False, True]
        assert loaded.transitions(np.array([0])).rewards.tolist() == [3.0]  # was 103: the window crossed
