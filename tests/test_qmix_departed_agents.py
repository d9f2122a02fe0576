"""QMIX's actions for an agent out of the episode: under action masks it may take action 0 alone (PyMARL's no-op for
a dead unit), so the action the replay stores for it and the TD target's maximum over its actions agree.

``tests/step_agents.py`` with ``length=2, masked=True``: ``agent_0`` leaves after step 1 and ``agent_1`` plays a
second step; both masks allow both actions while the agents are in. A departed agent's mask was all zeros (on the
step after it left, its final mask): it allowed everything, the replay stored random actions for it, and the
target took the maximum over its Q-values. With ``masked=False`` the env has no masks: the joint observation carries
an automatic alive mask in the same columns (before it, the same random actions and maximum).
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.data.batch import ReplayBatch  # noqa: E402

ENV = "pettingzoo:tests.step_agents"


def _collect(learning_starts: int, steps: int = 60, **env_kwargs):
    """A trainer that took ``steps`` exploring joint actions (one copy, epsilon 1 throughout), closed."""
    kwargs = {"length": 2, "masked": True, **env_kwargs}
    with pytest.warns(UserWarning, match="never learns") if learning_starts >= steps else contextlib.nullcontext():
        trainer = canter.make_trainer("qmix", ENV, env_kwargs=kwargs, seed=0, n_envs=1, max_steps=steps,
                                      learning_starts=learning_starts, eval_every=0, exploration_final_eps=1.0,
                                      double_q=False, net_arch=[8], mixing_embed_dim=4, hypernet_dim=8, batch_size=8)
    for _ in trainer():
        pass
    trainer.close()
    return trainer


@pytest.mark.parametrize("learning_starts", [10_000, 0])  # the warm-up's random actions; the policy's epsilon-greedy
def test_the_replay_stores_action_0_for_an_agent_that_left(learning_starts):
    trainer = _collect(learning_starts)
    buf = trainer.buffer
    obs, actions = buf.obs[:60, 0], buf.actions[:60, 0]
    phase = np.arange(60) % 3  # 0: both act; 1: agent_0 left (its final observation shown); 2: the reset-only step
    assert actions[phase == 1, 0].tolist() == [0] * 20  # were 0 or 1, at random
    assert (obs[phase == 0][:, :2, 2:] == 1).all()  # both agents in: both actions allowed
    assert obs[phase == 1][:, 0, 2:].tolist() == [[1.0, 0.0]] * 20  # agent_0 left: action 0 alone
    assert (obs[phase == 1][:, 1, 2:] == 1).all() and (obs[phase == 1][:, 0, :2] == [2.0, 0.0]).all()
    assert set(actions[phase == 0, 0].tolist()) == {0, 1} and set(actions[phase == 1, 1].tolist()) == {0, 1}


def test_the_td_target_takes_a_departed_agents_action_0():
    """With ``truncate=True`` every transition bootstraps (``agent_1``'s episode ends at its time limit), and
    ``agent_0`` is out of every next observation: its final one, then zeros."""
    trainer = _collect(10_000, steps=12, truncate=True)
    algo = trainer.agent.algorithm
    with torch.no_grad():  # every agent's action 1 worth far more than its action 0, in the target network
        algo.q_target.agent[-1].bias.copy_(torch.tensor([0.0, 50.0]))
    batch = ReplayBatch(*trainer.buffer.sample(16))
    assert batch.next_obs[:, 0, 2:].tolist() == [[1.0, 0.0]] * 16 and not batch.terminated.any()
    assert set(batch.next_obs[:, 2, 0].tolist()) == {1.0, 2.0}  # the state's t: both steps' transitions
    with torch.no_grad():
        q = algo.q_target.agent_q(batch.next_obs)
        chosen = torch.stack([q[:, 0, 0], q[:, 1].amax(1)], 1)
        expected = batch.rewards + batch.discounts * algo.q_target.mix(chosen, batch.next_obs)
    torch.testing.assert_close(algo.td_target(batch), expected)


def test_agents_a_time_limit_cut_at_the_teams_end_keep_their_mask_for_the_bootstrap():
    """``length=1, truncate=True``: both agents truncated on step 1, the team's value bootstrapped over their actions."""
    trainer = _collect(10_000, steps=12, length=1, truncate=True)
    obs = trainer.buffer.obs[:12, 0]
    assert (obs[1::2][:, :2, 2:] == 1).all()  # the final observations: both actions allowed to the bootstrap


def test_an_agent_that_left_before_a_truncated_teams_end_takes_action_0_in_the_bootstrap():
    """``length=2, truncate=True``: ``agent_0`` terminates on step 1; ``agent_1`` is truncated on step 2."""
    trainer = _collect(10_000, steps=12, truncate=True)
    obs = trainer.buffer.obs[:12, 0]
    assert obs[2::3][:, 0, 2:].tolist() == [[1.0, 0.0]] * 4 and (obs[2::3][:, 1, 2:] == 1).all()


def test_an_agent_that_terminated_on_a_truncated_teams_last_step_takes_action_0_in_the_bootstrap():
    """``length=1, split=True``: on step 1 ``agent_0`` terminates and ``agent_1`` is truncated, so the team is
    truncated and bootstrapped; only the agent the time limit cut keeps its mask (the test above had agent_0 leave a
    step before the team's end, which its name, 'terminated at a truncated team's end', did not say)."""
    trainer = _collect(10_000, steps=12, length=1, split=True)
    obs = trainer.buffer.obs[:12, 0]
    assert not trainer.buffer.terminated[:12:2, 0].any()  # (truncated: the team's value is bootstrapped)
    assert obs[1::2][:, 0, 2:].tolist() == [[1.0, 0.0]] * 6 and (obs[1::2][:, 1, 2:] == 1).all()


@pytest.mark.parametrize("learning_starts", [10_000, 0])
def test_without_masks_the_replay_stores_action_0_for_an_agent_that_left(learning_starts):
    """``masked=False``: the env has no action masks. The joint observation carries an automatic alive mask (every
    action allowed to an agent in the episode, action 0 alone to one out of it); without it the replay stored random
    actions for ``agent_0`` after it left."""
    trainer = _collect(learning_starts, masked=False)
    obs, actions = trainer.buffer.obs[:60, 0], trainer.buffer.actions[:60, 0]
    phase = np.arange(60) % 3
    assert actions[phase == 1, 0].tolist() == [0] * 20  # were 0 or 1, at random
    assert set(actions[phase == 0, 0].tolist()) == {0, 1} and set(actions[phase == 1, 1].tolist()) == {0, 1}
    assert obs[phase == 1][:, 0, 2:].tolist() == [[1.0, 0.0]] * 20 and (obs[phase == 1][:, 0, :2] == [2.0, 0.0]).all()
    assert (obs[phase == 0][:, :2, 2:] == 1).all() and (obs[phase == 1][:, 1, 2:] == 1).all()


def test_without_masks_the_td_target_takes_a_departed_agents_action_0():
    """As the masked case above: the target's maximum for ``agent_0``, out of every next observation, is its action
    0's value (it was its action 1's, 50 above)."""
    trainer = _collect(10_000, steps=12, truncate=True, masked=False)
    algo = trainer.agent.algorithm
    with torch.no_grad():
        algo.q_target.agent[-1].bias.copy_(torch.tensor([0.0, 50.0]))
    batch = ReplayBatch(*trainer.buffer.sample(16))
    assert not batch.terminated.any()
    with torch.no_grad():
        raw = _raw_agent_q(algo.q_target, batch.next_obs)
        chosen = torch.stack([raw[:, 0, 0], raw[:, 1].amax(1)], 1)
        expected = batch.rewards + batch.discounts * algo.q_target.mix(chosen, batch.next_obs)
    torch.testing.assert_close(algo.td_target(batch), expected)


def _raw_agent_q(model, obs: torch.Tensor) -> torch.Tensor:
    """Each agent's Q-values ``[B, k, n]`` from its two observation columns and its id, no mask applied."""
    k = model.k
    ids = torch.eye(k).expand(len(obs), k, k)
    return model.agent(torch.cat([obs[:, :k, :2], ids], -1))


def test_a_run_saved_without_the_alive_mask_is_refused_in_one_line_saying_why():
    """A QMIX run saved before the alive mask (2026-11-28) on an env without masks observed ``[3, 2]``; the env's
    joint view now gives ``[3, 4]``: eval, play and init_from (``spaces_mismatch``) and resume say why."""
    import gymnasium as gym

    from canter.envs import make_vec_env
    from canter.envs.spaces import check_agent_spaces
    from canter.errors import CanterError

    env = make_vec_env(ENV, 1, policies="joint", env_kwargs={"length": 2})
    space, actions = env.single_observation_space, env.single_action_space
    env.close()
    assert space.shape == (3, 4) and space.mask_width == 2
    old = type("OldAgent", (), {"observation_space": gym.spaces.Box(-np.inf, np.inf, (3, 2), np.float32),
                                "action_space": actions})()
    with pytest.raises(CanterError, match="saved before 2026-11-28 on an env without action masks") as info:
        check_agent_spaces(old, ENV, space, actions)
    assert "\n" not in str(info.value) and "train it again" in str(info.value)
    old.observation_space = space  # a run saved since: no complaint
    check_agent_spaces(old, ENV, space, actions)


def test_a_centralised_critics_space_that_gained_a_mask_is_not_called_a_qmix_run():
    """A central_state policy's ``[2, w]`` observation, saved on an env without masks and met with one that has them
    now (``MaskedBox [2, w + 3]``, Discrete(3) actions), was refused saying it was 'a QMIX run saved before
    2026-11-28': the note took any 2-D observation that gained mask columns. Only QMIX's joint action (k agents'
    MultiDiscrete, one mask column per action) gets it."""
    import gymnasium as gym

    from canter.envs.masks import MaskedBox
    from canter.envs.spaces import spaces_mismatch

    low, high = np.full((2, 8), -np.inf), np.full((2, 8), np.inf)
    low[:, -3:], high[:, -3:] = 0.0, 1.0
    masked, plain = MaskedBox(low, high, 3), gym.spaces.Box(-np.inf, np.inf, (2, 5), np.float32)
    message = spaces_mismatch((plain, gym.spaces.Discrete(3)), (masked, gym.spaces.Discrete(3)))
    assert message is not None and "QMIX" not in message, message
    joint = gym.spaces.MultiDiscrete([3])  # QMIX of one agent: rows k + 1 = 2, one column per action
    assert "a QMIX run saved before 2026-11-28" in spaces_mismatch((plain, joint), (masked, joint))
