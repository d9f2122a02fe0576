"""Datasets from the replay buffer an off-policy run saved (``canter collect RUN --from-replay``): its whole episodes,
env by env, oldest first (:func:`from_replay`; re-exported by :mod:`canter.data.dataset`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from canter.checkpoint import load_checkpoint
from canter.data.dataset_checks import missing_replay_error, replay_checkpoint
from canter.errors import CanterError


def from_replay(run_dir: str | Path) -> TransitionDataset:
    """The replay buffer an off-policy run saved in ``checkpoints/last`` as a dataset (the DQN-Replay
    idea: everything the run's changing policy collected). Transitions are ordered env by env,
    oldest first, whole episodes only (the part of an episode whose start the ring overwrote, and
    each env's unfinished last episode, are left out and counted in ``info``), so episode returns
    and Minari exports see real episodes; actions are converted back to what the env took. Rewards
    are the env's (a run that normalised rewards scaled them when sampling; older canter runs stored
    them scaled, which ``info["reward_scaled"]`` says). ``run_dir`` may also be the run's ``checkpoints``
    folder or a checkpoint path (only ``last`` keeps the buffer)."""
    from canter.api import load
    from canter.data.dataset import check_dataset_agent

    base = replay_checkpoint(run_dir)
    agent = load(base)
    check_dataset_agent(agent, f"run '{run_dir}'")
    state, meta = load_checkpoint(base)
    saved = (state.get("trainer") or {}).get("buffer")
    if saved is None:
        raise missing_replay_error(run_dir, base, state, meta)
    obs_space, act_space = agent.observation_space, agent.action_space
    env_id = agent.run_config.env
    # an Ape-X run's buffer is one shard per explorer (canter.data.sharded), each its own streams
    parts = [_whole_transitions(shard, obs_space, act_space, env_id) for shard in saved.get("shards", [saved])]
    held = sum(n for _, _, n in parts)
    parts = [(batch, truncated) for batch, truncated, _ in parts if batch is not None]
    if not parts:
        raise CanterError(f"the replay buffer of run '{run_dir}' holds no complete episode")
    obs, actions, rewards, next_obs, terminated = (np.concatenate([getattr(b, k).numpy() for b, _ in parts])
                                                   for k in ("obs", "actions", "rewards", "next_obs", "terminated"))
    truncated = np.concatenate([t for _, t in parts])
    info = {"policy": "replay", "run": str(Path(run_dir).absolute()), "algorithm": meta.get("algorithm"), "checkpoint_step":
            meta.get("step"), "episodes": int((terminated.astype(bool) | truncated).sum()),
            "partial_episode_transitions_left_out": held - len(rewards),
            "reward_scaled": bool(getattr(agent.algorithm.config, "normalize_reward", False))
            and not state["trainer"].get("rewards_raw", False)}
    data = TransitionDataset(
        obs=obs, actions=np.asarray(agent.to_env_actions(actions)).reshape(len(rewards), *act_space.shape),
        rewards=rewards, next_obs=next_obs, terminated=terminated.astype(bool), truncated=truncated, env_id=env_id,
        observation_space=obs_space, action_space=act_space, info=info,
        env_kwargs=dict(agent.run_config.env_kwargs or {}))
    returns = data.episode_returns()  # whole episodes only, env by env
    data.info["mean_return"] = float(returns.mean()) if len(returns) else None
    return data


def _whole_transitions(saved: dict[str, Any], obs_space: gym.Space, act_space: gym.Space,
                       env_id: str) -> tuple[Any, np.ndarray | None, int]:
    """One saved replay buffer's whole episodes: ``(one-step transitions or None, truncated flags,
    the number of transitions it held)``."""
    from canter.data.framestack import FrameStackReplay
    from canter.data.pixel_columns import pixel_columns_buffer
    from canter.data.replay import ReplayBuffer
    from canter.envs.atari import is_atari

    discrete = isinstance(act_space, gym.spaces.Discrete)
    frames = {"frame_channels": int(saved.get("frame_channels", 1))} if is_atari(env_id) else {}  # RGB: 3
    args = (int(saved["capacity"]), obs_space.shape, () if discrete else (int(np.prod(act_space.shape)),))
    kwargs: dict[str, Any] = dict(
        obs_dtype=obs_space.dtype, n_envs=int(saved["n_envs"]),  # integer actions as make_replay_buffer stores them
        act_dtype=np.int64 if isinstance(act_space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)) else np.float32)
    buffer = (FrameStackReplay(*args, **kwargs, **frames) if frames
              else pixel_columns_buffer(ReplayBuffer, obs_space, *args, **kwargs))  # pixels as bytes, as trained
    buffer.load_state_dict(saved)
    held = buffer.chronological_indices()
    idx = _whole_episodes(held, buffer)
    if not len(idx):
        return None, None, len(held)
    batch = buffer.transitions(idx)  # one-step transitions: the buffer was rebuilt with n_step 1
    truncated = buffer.done.reshape(-1)[idx] & ~buffer.terminated.reshape(-1)[idx]
    return batch, truncated, len(held)


def _whole_episodes(idx: np.ndarray, buffer: Any) -> np.ndarray:
    """``idx`` (a buffer's chronological indices, env by env) cut to whole episodes. Left out: once the ring has
    wrapped, each env's oldest episode unless the reset-only row before its start is held (:func:`_starts_episode`);
    each env's unfinished last episode; and an episode cut off without an end, where a reset-only row follows a
    row that did not end it (a resume that could not restore the env started fresh episodes)."""
    done = buffer.done.reshape(-1)[idx]
    env = idx % buffer.n_envs
    keep = np.zeros(len(idx), bool)
    for e in range(buffer.n_envs):
        where = np.flatnonzero(env == e)  # one contiguous run, oldest first
        if not len(where):
            continue
        rows = idx[where] // buffer.n_envs
        cut = np.zeros(len(where), bool)
        cut[:-1] = ((rows[1:] - rows[:-1]) % buffer.length != 1) & ~done[where[:-1]]  # a skipped row, no end
        start, whole_first = 0, not buffer.full or _starts_episode(buffer, int(rows[0]), e)
        for k, b in enumerate(np.flatnonzero(done[where] | cut)):
            if done[where[b]] and (k > 0 or whole_first):
                keep[where[start:b + 1]] = True
            start = b + 1
    return idx[keep]


def _starts_episode(buffer: Any, row: int, env: int) -> bool:
    """Whether env ``env``'s oldest transition in a wrapped ring, at row ``row``, starts an episode: the row before it
    is a reset-only row, not the head (overwritten), nor a frame-stack buffer's row whose history the head took
    (``stack - 1`` rows after it) unless the row before that ended an episode."""
    before = (row - 1) % buffer.length
    if before == buffer.pos or buffer.valid[before, env]:
        return False
    if (before - buffer.pos) % buffer.length >= getattr(buffer, "stack", 1):
        return True
    ended = (before - 1) % buffer.length
    return ended != buffer.pos and bool(buffer.done[ended, env])


# at the end, after from_replay (canter.data.dataset imports this module at its own end, after TransitionDataset):
# either module may be imported first, and from_replay's return annotation resolves (typing.get_type_hints)
from canter.data.dataset import TransitionDataset  # noqa: E402
