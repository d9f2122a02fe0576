"""The DeepMind wrappers' counterparts around ale-py's native vector env (``AtariVectorEnv``): life-loss
handling (:class:`NativeNewLifeStack`, :class:`NativeFireAfterLifeLoss`), whole-game scores
(:class:`NativeGameScore`) and the seed range it takes (:class:`NativeSeedRange`). Built by
:func:`canter.envs.atari.make_atari_vec`."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from canter.envs.vector import GAME_RETURN


class _NativeLives(gym.vector.VectorWrapper):
    """ale-py's native vector env, with each copy's lives tracked: :meth:`reset_mask` resets the count of
    the copies a (partial) reset restarted, :meth:`lost_lives` says which copies lost a life on a step."""

    def __init__(self, env: gym.vector.VectorEnv) -> None:
        super().__init__(env)
        self.lives = np.zeros(env.num_envs, dtype=np.int64)

    def reset_mask(self, options: dict[str, Any] | None, info: dict[str, Any]) -> np.ndarray:
        """The copies a reset restarted (all, or ``options["reset_mask"]``), their lives counted again."""
        mask = np.ones(self.num_envs, dtype=bool) if not options or options.get("reset_mask") is None \
            else np.asarray(options["reset_mask"], dtype=bool)
        self.lives[mask] = np.asarray(info["lives"])[mask]
        return mask

    def lost_lives(self, info: dict[str, Any]) -> np.ndarray:
        """The copies whose step lost a life with lives left (a game over is not a lost life)."""
        lives = np.asarray(info["lives"])
        lost = (0 < lives) & (lives < self.lives)
        self.lives = lives.copy()
        return lost


class NativeGameScore(_NativeLives):
    """ale-py's native training env, built without its reward clipping: clips rewards to their sign here
    (``clip``: env_kwargs' ``clip_reward``) and reports each whole game's raw score in ``info[GAME_RETURN]``
    (NaN for the copies whose game did not end on the step), as :class:`GameScore` does on the wrapper path.
    A game ends with a truncation or with a ``terminated`` that is not a lost life (lives left and fewer than
    before).

    A lost life on the step that reaches the game's frame limit (``frames``: ``max_num_frames_per_episode``,
    counted from the end of the reset, as ale-py does) is a truncation too: ale-py reports only ``terminated``
    there (its ``truncated`` excludes a terminal step) and resets the game on the next step, so the game was never
    reported and its score and steps were added to the next game's. Here that step is ``truncated`` as well, as on
    the wrapper path (ALE's own limit), and ends the game."""

    def __init__(self, env: gym.vector.VectorEnv, clip: bool = True, frames: int = 108_000) -> None:
        super().__init__(env)
        self.score = np.zeros(env.num_envs)
        self.clip = clip
        self.frames = frames
        self.start = np.zeros(env.num_envs, dtype=np.int64)  # each game's episode frame number after its reset
        self.restarts = np.zeros(env.num_envs, dtype=bool)  # the game ended: the next step resets it (NEXT_STEP)

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:  # noqa: D102
        obs, info = self.env.reset(seed=seed, options=options)
        mask = self.reset_mask(options, info)
        self.score[mask] = 0.0
        self.start[mask] = np.asarray(info["episode_frame_number"])[mask]
        self.restarts[mask] = False
        return obs, info

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:  # noqa: D102
        obs, reward, terminated, truncated, info = self.env.step(actions)
        raw = np.asarray(reward, dtype=np.float64)
        self.score += raw
        frame = info["episode_frame_number"]
        if self.restarts.any():  # these copies' games were reset on this step: their frames count from here
            self.start[self.restarts] = frame[self.restarts]
        terminated = np.asarray(terminated, dtype=bool)
        lost = terminated & self.lost_lives(info)
        if lost.any():  # a lost life on the step that reaches the frame limit: ale-py says terminated, not truncated
            truncated = np.asarray(truncated, dtype=bool) | (lost & (frame - self.start >= self.frames))
        ended = np.asarray(truncated, dtype=bool) | (terminated & ~lost)
        info = {**info, GAME_RETURN: np.where(ended, self.score, np.nan)}
        self.score[ended] = 0.0  # the next step resets the game (NEXT_STEP), with reward 0
        self.restarts = ended
        if self.clip:
            reward = np.sign(raw).astype(np.asarray(reward).dtype)
        return obs, reward, terminated, truncated, info


class NativeNewLifeStack(_NativeLives):
    """ale-py's native training env: after a lost life it continues the game with its frame stack, so
    the first stacks of the next training episode held frames of the life before. Here those older
    slots become zero frames, as Stable-Baselines3's ``VecFrameStack`` pads at every episode end and as
    the native env pads after a game's reset: the episode's first stack is three zero frames and its
    first frame, the next one two zero frames, then one (for the default stack of 4).

    ``noop`` (games without FIRE): the step after a lost life's ``terminated``, the boundary that NEXT_STEP makes
    of it (no transition records its action), plays NOOP, as the wrapper path's ``EpisodicLife`` reset and SB3's
    ``EpisodicLifeEnv`` do; the native env played the policy's action there (chosen on the previous life's last
    stack), which moved the player before the new episode's first frame. Games with FIRE get FIRE there instead
    (:class:`NativeFireAfterLifeLoss`)."""

    def __init__(self, env: gym.vector.VectorEnv, noop: bool = False) -> None:
        super().__init__(env)
        self.noop = noop
        self.depth = int(env.single_observation_space.shape[0])  # env_kwargs' frame_stack
        self.age = np.full(env.num_envs, self.depth - 1)  # frames of the episode in the stack, less one (capped)
        self.starts = np.zeros(env.num_envs, dtype=bool)  # a life was lost: the next step begins an episode

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:  # noqa: D102
        obs, info = self.env.reset(seed=seed, options=options)
        mask = self.reset_mask(options, info)
        self.age[mask], self.starts[mask] = self.depth - 1, False
        return obs, info

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:  # noqa: D102
        if self.noop and self.starts.any():
            actions = np.array(actions, copy=True)
            actions[self.starts] = 0  # NOOP
        obs, reward, terminated, truncated, info = self.env.step(actions)
        self.age = np.minimum(self.age + 1, self.depth - 1)
        self.age[self.starts] = 0  # this step's frame is the new episode's first
        clear = np.flatnonzero(self.age < self.depth - 1)
        if clear.size:
            obs = np.array(obs, copy=True)
            for e in clear:
                obs[e, : self.depth - 1 - self.age[e]] = 0
        self.starts = self.lost_lives(info) & np.asarray(terminated, dtype=bool) & ~np.asarray(truncated, dtype=bool)
        return obs, reward, terminated, truncated, info


class NativeFireAfterLifeLoss(_NativeLives):
    """ale-py's native vector env: press FIRE after a lost life, for games whose action 1 is FIRE.

    The native env continues the game after a lost life without a FIRE press, so a policy that
    never serves stalled a FIRE game (Breakout) until the 27,000-step cap. Here the copy's next
    actions are replaced: in evaluation by FIRE then action 2 (the wrapper path's
    :class:`FireAfterLifeLoss`; the rewards of those steps count, the policy's actions for them are
    not used); in training by FIRE on the next step only, the step that canter's NEXT_STEP convention
    treats as the boundary after the life's ``terminated`` (no transition records its action), as
    ``EpisodicLife`` + ``FireReset`` press FIRE at the reset after a lost life. A game over (no
    lives left) resets the game instead, which presses FIRE itself.
    """

    def __init__(self, env: gym.vector.VectorEnv, training: bool) -> None:
        super().__init__(env)
        self.presses = np.array([1] if training else [1, 2])
        self.queue = np.full((env.num_envs, len(self.presses)), -1, dtype=np.int64)  # -1: the policy's action

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:  # noqa: D102
        obs, info = self.env.reset(seed=seed, options=options)
        self.queue[self.reset_mask(options, info)] = -1
        return obs, info

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:  # noqa: D102
        forced = self.queue[:, 0] >= 0
        if forced.any():
            actions = np.array(actions, copy=True)
            actions[forced] = self.queue[forced, 0]
            self.queue[forced] = np.roll(self.queue[forced], -1, axis=1)
            self.queue[forced, -1] = -1
        obs, reward, terminated, truncated, info = self.env.step(actions)
        lost = self.lost_lives(info) & ~truncated
        if not len(self.presses) == 1:  # evaluation: a lost life does not end the episode
            lost &= ~terminated
        self.queue[lost] = self.presses
        return obs, reward, terminated, truncated, info


class NativeSeedRange(gym.vector.VectorWrapper):
    """ale-py's native vector env seeds its copy ``i`` with ``seed + i`` as a 32-bit signed integer and
    refuses a larger one with a ``TypeError``; the run's seed may go up to ``2**32 - 1``, and evaluation
    and Ray explorer replacements add large offsets to it. A base seed past the last one the env takes
    (``2**31 - num_envs``) is taken modulo ``2**31 - num_envs + 1``; the seeds it takes are unchanged.

    Around every native env, it also says why a run on it cannot resume exactly (the resume warning's reason,
    :func:`canter.envs.state.capture_env`; it named the attribute ``VecEnv.env.env.env.env.env.ale``)."""

    resume_problem = ("ale-py's native Atari vector env (--vectorization auto or native) cannot save its games; "
                      "train with --vectorization sync for a run that resumes exactly")

    @staticmethod
    def wrapped(seed: int, num_envs: int) -> int:
        """The base seed the env gets for ``seed``."""
        return int(seed) % (2**31 - num_envs + 1)

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:  # noqa: D102
        if isinstance(seed, (int, np.integer)):
            seed = self.wrapped(seed, self.num_envs)
        return self.env.reset(seed=seed, options=options)
