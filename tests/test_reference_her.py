"""Hindsight replay against a reference kept outside the buffer: two envs' NEXT_STEP streams written interleaved,
episodes that terminate, are truncated, or are still running, in a ring that wraps (some episodes longer than it).
The test logs every transition it writes (its episode, its step in it, the vector step that wrote it) and checks
each sampled relabelled transition against that log: the goal is an achieved goal of the same episode, from the
step after the transition or later (``future``), its last (``final``) or any step still held (``episode``), never
past an unfinished episode's newest stored step; the reward is the env's ``compute_reward(next achieved goal, new
goal, the transition's own step info)``; ``terminated`` is ``compute_terminated``'s where the env has one, else
the stored flag; a fraction ``her_goals / (her_goals + 1)`` is relabelled, and the goal is uniform over its range.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from canter.data.her import HerReplayBuffer, check_goal_functions
from canter.envs.goals import GoalLayout
from canter.envs.packing import pack_observations

DESIRED = -5.0  # every stored transition's own desired goal: relabelled transitions have another
N = 2


class Ledger(gym.Env):
    """A goal env whose achieved goal is ``(episode id, step in it)``; its reward reads the step info's ``w``."""

    def __init__(self, terminated_fn: bool = True) -> None:
        box = gym.spaces.Box(-1e4, 1e4, (2,), np.float32)
        self.observation_space = gym.spaces.Dict({"observation": box, "achieved_goal": box, "desired_goal": box})
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        if not terminated_fn:
            self.compute_terminated = None

    def compute_reward(self, achieved_goal, desired_goal, info):  # noqa: D102
        w = np.array([i.get("w", 0.0) for i in info]) if isinstance(info, list) else info.get("w", 0.0)
        return -np.abs(np.asarray(achieved_goal) - desired_goal).sum(-1) + 1e-3 * w

    def compute_terminated(self, achieved_goal, desired_goal, info):  # noqa: D102
        return (np.asarray(achieved_goal) == desired_goal).all(-1)


def _layout(terminated_fn: bool) -> GoalLayout:
    env = Ledger(terminated_fn)
    layout = GoalLayout(pack_observations(env), "ledger")
    if not terminated_fn:
        layout.compute_terminated = None
    check_goal_functions(layout, "ledger", {"w": 1.0})
    assert layout.info_keys == ("w",)
    return layout


def _obs(episode: int, k: int) -> np.ndarray:
    """Flat observation: achieved goal (episode, k), desired goal (-5, -5), observation 0 (sorted Dict keys)."""
    return np.array([episode, k, DESIRED, DESIRED, 0, 0], np.float32)


#: per env, its episodes' lengths and how they end ('term', 'trunc'), cycled
PLAN = {0: [(3, "term"), (7, "trunc"), (2, "term"), (12, "trunc")], 1: [(5, "trunc"), (4, "term"), (9, "term")]}


def _fill(buf: HerReplayBuffer, steps: int):
    """Write ``steps`` vector steps of both envs' streams, yielding after each the ledger: per episode id its length
    so far, whether it ended, whether it terminates, and per (episode id, k) the vector step that wrote transition k,
    and ``written``, the vector steps so far."""
    ep, k, ended = [0] * N, [0] * N, [False] * N
    ledger = {"steps": {}, "len": {}, "ended": {}, "term": {}, "stored_term": {}}
    obs = np.stack([_obs(100 * e, 0) for e in range(N)])
    for s in range(steps):
        nxt, term, trunc, valid = obs.copy(), np.zeros(N, bool), np.zeros(N, bool), np.ones(N, bool)
        w = np.zeros(N)
        for e in range(N):
            episode = 100 * e + ep[e]
            if ended[e]:  # gymnasium's reset-only step: the final observation's row, no transition
                ep[e], k[e], ended[e] = ep[e] + 1, 0, False
                nxt[e], valid[e] = _obs(100 * e + ep[e], 0), False
                continue
            length, how = PLAN[e][ep[e] % len(PLAN[e])]
            ledger["steps"][episode, k[e]] = s
            w[e] = 1000 * e + 10 * k[e] + ep[e] % 7  # a distinct info per transition
            k[e] += 1
            nxt[e] = _obs(episode, k[e])
            ledger["len"][episode] = k[e]
            if k[e] == length:
                ended[e] = True
                term[e], trunc[e] = how == "term", how == "trunc"
            ledger["ended"][episode], ledger["term"][episode] = ended[e], how == "term"
        buf.add(obs, np.zeros((N, 1), np.float32), np.full(N, 7.0, np.float32), nxt, term, valid, trunc,
                info={"w": w, "_w": valid.copy()})
        obs = nxt
        ledger["written"] = s + 1
        yield ledger


def _w(episode: int, k: int) -> float:
    e, i = divmod(episode, 100)
    return 1000 * e + 10 * k + i % 7


@pytest.mark.parametrize("terminated_fn", [True, False], ids=["compute_terminated", "stored-flag"])
@pytest.mark.parametrize("capacity", [10_000, 21], ids=["no-wrap", "wraps"])
@pytest.mark.parametrize("strategy", ["future", "final", "episode"])
def test_relabelled_transitions_match_the_reference(strategy, capacity, terminated_fn):
    buf = HerReplayBuffer(capacity, (6,), (1,), n_envs=N, seed=3, layout=_layout(terminated_fn), her_goals=4,
                          strategy=strategy)
    seen = {"relabelled": 0, "sampled": 0, "top": 0, "expected": 0.0, "variance": 0.0, "running": 0, "reached": 0,
            "earlier": 0}
    for ledger in _fill(buf, 160):  # sampled after every 4th step: episodes ended, running, written over
        if ledger["written"] % 4 == 0:
            _check(buf, ledger, strategy, terminated_fn, seen)
    assert abs(seen["relabelled"] / seen["sampled"] - 0.8) < 5 * np.sqrt(0.16 / seen["sampled"])
    # uniform over its range: how often the top of the range was drawn, against its expectation
    assert abs(seen["top"] - seen["expected"]) <= 5 * np.sqrt(seen["variance"]) + 1
    assert seen["running"] and seen["reached"] and (strategy == "final" or seen["reached"] < seen["relabelled"])
    if strategy == "episode" and capacity > 1000:
        assert seen["earlier"]  # earlier steps of the episode too


def _check(buf: HerReplayBuffer, ledger: dict, strategy: str, terminated_fn: bool, seen: dict) -> None:
    """Sample and check each transition against ``ledger``; count into ``seen``."""
    b = buf.sample(800)
    obs, nxt = b.obs.numpy(), b.next_obs.numpy()
    rewards, terminated = b.rewards.numpy(), b.terminated.numpy()
    episode, k = obs[:, 0].astype(int), obs[:, 1].astype(int)
    assert (nxt[:, 0] == episode).all() and (nxt[:, 1] == k + 1).all()  # a transition of the log: k -> k + 1
    held_from = ledger["written"] - (buf.length - 1)  # the ring holds the rows of the last length - 1 vector steps
    assert all(ledger["steps"][e, j] >= held_from for e, j in zip(episode, k))
    relabelled = obs[:, 2] != DESIRED
    seen["relabelled"] += int(relabelled.sum())
    seen["sampled"] += len(obs)
    # transitions kept as stored: their goal, reward and flag
    assert (obs[~relabelled, 2:4] == DESIRED).all() and (nxt[~relabelled, 2:4] == DESIRED).all()
    assert (rewards[~relabelled] == 7.0).all()
    stored_term = np.array([ledger["term"][e] and ledger["len"][e] == j + 1 and ledger["ended"][e]
                            for e, j in zip(episode, k)])
    assert (terminated[~relabelled] == stored_term[~relabelled]).all()

    goal = obs[relabelled, 2:4]
    assert (nxt[relabelled, 2:4] == goal).all()  # the same goal in the observation and the next one
    ep, kk, goal_ep, goal_k = episode[relabelled], k[relabelled], goal[:, 0].astype(int), goal[:, 1].astype(int)
    assert (goal_ep == ep).all()  # the same episode
    last = np.array([ledger["len"][e] for e in ep])  # its final observation's k, or the newest stored one's
    first_held = np.array([min(j for j in range(ledger["len"][e] + 1) if ledger["steps"].get((e, j), -1) >= held_from)
                           for e in ep])
    if strategy == "future":
        low = kk + 1
    elif strategy == "final":
        low = last
    else:
        low = first_held + 1
    assert ((goal_k >= low) & (goal_k <= last)).all()
    span = last - low + 1
    seen["top"] += int((goal_k == last).sum())
    seen["expected"] += (1 / span).sum()
    seen["variance"] += (1 / span * (1 - 1 / span)).sum()
    seen["earlier"] += int((goal_k <= kk).sum())
    # the reward: compute_reward(next achieved goal, new goal, the transition's own info)
    achieved_next = np.stack([ep, kk + 1], 1).astype(np.float32)
    w = np.array([_w(e, j) for e, j in zip(ep, kk)])
    np.testing.assert_allclose(rewards[relabelled], -np.abs(achieved_next - goal).sum(1) + 1e-3 * w, rtol=0, atol=1e-4)
    reached = goal_k == kk + 1
    expect_term = reached if terminated_fn else stored_term[relabelled]
    assert (terminated[relabelled] == expect_term).all()
    seen["reached"] += int(reached.sum())
    # the unfinished episodes gave goals up to their newest stored step, never past it (checked above: last)
    seen["running"] += int(sum(not ledger["ended"][e] for e in ep))
