"""Play a trained agent: render it in a window or record videos."""
from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import gymnasium as gym

from canter.envs import check_env_id, make_env, make_vec_env
from canter.envs.make import run_vectorization
from canter.envs.multiagent import is_multiagent
from canter.envs.spaces import check_agent_spaces
from canter.envs.turns import is_turn_based
from canter.errors import CanterError, bool_argument, keywords_checked, require
from canter.held_warnings import unlisted_render_mode_held
from canter.play_video import PartialVideo, StreamingRecordVideo, open_video, warn_frame_lost  # noqa: F401
from canter.render_window import drew_nowhere, sdl_complaints_held, set_offscreen_driver
from canter.trainers.evaluation import begin_exploring, eval_policy, run_deterministic, seed_random_policies


def make_render_env(env_id: str, mode: str | None, seed: int = 0, env_kwargs: dict[str, Any] | None = None,
                    vectorization: str = "sync") -> gym.Env:
    """``make_env`` with ``render_mode=mode``, checked by rendering one frame (CanterError if it cannot): see
    :func:`_make_render_env`. Gymnasium's warning that the env is made with a render mode it does not list is held
    back (:func:`unlisted_render_mode_held`): canter's one-line error says it where the mode cannot render."""
    shown = mode if mode is not None else (env_kwargs or {}).get("render_mode")  # as _make_render_env resolves it
    with unlisted_render_mode_held(), sdl_complaints_held(shown):  # SDL's no-display lines before a refusal: dropped
        return _make_render_env(env_id, mode, seed, env_kwargs, vectorization)


def _make_render_env(env_id: str, mode: str | None, seed: int = 0, env_kwargs: dict[str, Any] | None = None,
                     vectorization: str = "sync") -> gym.Env:
    """``make_env`` with ``render_mode=mode``, checked by rendering one frame (CanterError if it cannot).

    A ``render_mode`` in ``env_kwargs`` (a run trained with it, ``--env-kwargs``) is used when ``mode`` is
    None; a ``mode`` (``--render``, ``--video-dir``, ``--record-every``) wins over it. An Atari game with
    ``vectorization`` ``auto`` or ``native`` (and ``env_kwargs`` the native env takes) is one copy of ale-py's
    native env (:class:`canter.envs.atari_play.NativePlayEnv`), as a run trained so is evaluated; else the
    gymnasium-wrapper path."""
    from canter.envs.atari import is_atari, native_takes

    kwargs = dict(env_kwargs or {})
    given = kwargs.pop("render_mode", None)  # passed beside render_mode=: a TypeError traceback
    mode = given if mode is None else mode
    display = bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    if mode == "rgb_array" and not display:
        set_offscreen_driver()  # off-screen frames need no display (quiets SDL): SDL_VIDEODRIVER=dummy, canter's
        # gymnasium's MuJoCo renderer tries GLFW first, which needs a display: EGL renders without one
        os.environ.setdefault("MUJOCO_GL", "egl")
    if vectorization in ("auto", "native") and is_atari(env_id) and native_takes(kwargs):
        from canter.envs.atari_play import make_native_play_env

        check_env_id(env_id)
        env = make_native_play_env(env_id.split(":", 1)[-1], mode, kwargs)
    else:
        env = make_env(env_id, render_mode=mode, **kwargs)
    env = WarnOnClose(env, env_id)  # (before any close: the refusals below are one line, not the close's traceback)
    refused = _no_window_modes(env_id, env.metadata) if mode == "human" else None
    if refused is not None:  # no window: the episodes played unseen
        env.close()
        raise refused
    if mode == "human" and not display and _is_mujoco(env):  # GLFW would abort the process (a C assertion)
        env.close()
        raise CanterError(f"rendering '{env_id}' in a window (--render) needs a display, and there is none "
                          f"(DISPLAY is not set); record it with --video-dir instead")
    if mode is not None:
        try:
            env.reset(seed=seed)
            frame = env.render()
        except gym.error.DependencyNotInstalled as exc:
            env.close()
            raise CanterError(f"rendering '{env_id}' needs pygame: pip install 'canter[video]' ({exc})") from None
        except NotImplementedError as exc:  # gymnasium.Env.render's own: the env has no render method
            env.close()
            need = "recording video needs" if mode == "rgb_array" else "--render needs"
            detail = f" ({' '.join(str(exc).split())})" if str(exc).strip() else ""
            raise CanterError(f"'{env_id}' cannot render: its render() raised NotImplementedError{detail}, as an env "
                              f"without a render method does; {need} an env that renders in render_mode "
                              f"{mode!r}") from None
        except Exception as exc:  # noqa: BLE001 - a render_mode from env_kwargs the env cannot render in
            env.close()
            checked = _render_check_failed(exc)  # an env that declares no such render mode, or renders no frame
            if checked is not None and given is not None and mode == given:  # the mode came from env_kwargs
                raise CanterError(f"bad env_kwargs for '{env_id}': render_mode={given!r} cannot render: {checked}"
                                  ) from None
            if checked is not None:
                need = "recording video needs" if mode == "rgb_array" else "--render needs"
                raise CanterError(f"'{env_id}' cannot render in render_mode {mode!r}: {checked}; {need} an env that "
                                  f"lists {mode!r} in its metadata['render_modes'] and renders in it") from None
            if _is_mujoco(env):  # no OpenGL for MuJoCo: mujoco.FatalError, or PyOpenGL's errors, were a traceback
                detail = " ".join(str(exc).split()) or type(exc).__name__
                raise CanterError(f"rendering '{env_id}' failed: {detail}; MuJoCo renders through OpenGL: set "
                                  f"MUJOCO_GL=egl or MUJOCO_GL=osmesa (the system's EGL or OSMesa library) where "
                                  f"there is no display") from None
            if given is None or mode != given:
                raise
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise CanterError(f"bad env_kwargs for '{env_id}': render_mode={given!r} cannot render: {detail}") from None
        if mode == "rgb_array" and not (isinstance(frame, np.ndarray) and frame.ndim == 3):
            modes = env.metadata.get("render_modes", [])
            env.close()  # RecordVideo would warn once and record nothing
            raise CanterError(f"'{env_id}' renders no image frames (its render modes: {', '.join(modes) or 'none'}): "
                              f"recording video needs an env with rgb_array rendering")
        refused = drew_nowhere(env_id) if mode == "human" else None
        if refused is not None:  # pygame's window drew nowhere: the episodes played unseen, exit code 0
            env.close()
            raise refused
    return env


def _no_window_modes(env_id: str, metadata: Any) -> CanterError | None:
    """The error for ``--render`` of an env whose ``metadata["render_modes"]`` lists modes but not ``human`` (it
    opens no window), else None."""
    modes = metadata.get("render_modes") if isinstance(metadata, dict) else None
    if isinstance(modes, (list, tuple)) and modes and "human" not in modes:
        return CanterError(f"'{env_id}' cannot render in a window (its render modes: {', '.join(map(str, modes))}): "
                           f"--render needs an env that renders in render_mode 'human'")
    return None


class WarnOnClose(gym.Wrapper):
    """An env whose ``close()`` error is a one-line warning naming ``env_id``: a played or recorded env that raised
    there was a traceback after its episodes (the videos written), or before training began (``--record-every``
    checks that the env renders), as the vector envs' copies warn (:meth:`canter.envs.vector.VecEnv.close`)."""

    def __init__(self, env: gym.Env, env_id: str) -> None:
        super().__init__(env)
        self.env_id = env_id

    def close(self) -> None:
        """Close the env; an error of its ``close()`` is a warning."""
        from canter.envs.vector import warn_close_error

        try:
            self.env.close()
        except Exception as exc:  # noqa: BLE001 - the env's own error, whatever it is
            warn_close_error(self.env_id, exc)


def _render_check_failed(exc: BaseException) -> str | None:
    """The message of ``exc`` where it is gymnasium's passive env checker's AssertionError about rendering (an env
    whose ``metadata["render_modes"]`` lacks the mode, or whose ``render()`` returned no frame of it), else None:
    an assertion of the env's own is its bug, whose traceback helps."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if not isinstance(exc, AssertionError) or tb is None or not tb.tb_frame.f_code.co_filename.endswith(
            os.path.join("gymnasium", "utils", "passive_env_checker.py")):
        return None
    return f"gymnasium's env checker: {' '.join(str(exc).split())}"


def _is_mujoco(env: gym.Env) -> bool:
    """Whether ``env`` is one of gymnasium's MuJoCo envs (a subclass of its ``MujocoEnv``)."""
    import sys

    module = sys.modules.get("gymnasium.envs.mujoco.mujoco_env")  # imported by every MuJoCo env
    return module is not None and isinstance(env.unwrapped, module.MujocoEnv)


def check_video_dir(video_dir: str) -> None:
    """Refuse a ``video_dir`` that already holds videos named as :func:`play` names them
    (``play-episode-N.mp4``): they would be overwritten."""
    if not os.path.isdir(video_dir):
        return
    taken = sorted(p.name for p in Path(video_dir).glob("play-episode-*.mp4"))
    if taken:
        raise CanterError(f"--video-dir '{video_dir}' already holds {taken[0]}"
                          f"{f' and {len(taken) - 1} more videos' if len(taken) > 1 else ''} from an earlier play; "
                          "they are not overwritten: move them or choose another --video-dir")


@keywords_checked("canter.play.play")
def play(agent: Any, env: str | None = None, episodes: int = 1, render: bool = False,
         video_dir: str | None = None, seed: int = 0, env_kwargs: dict[str, Any] | None = None,
         on_episode: Callable[[int, float], None] | None = None, vectorization: str | None = None,
         deterministic: bool | None = None) -> list[float]:
    """Run ``episodes`` episodes with ``agent.predict`` (``deterministic`` False: the policy's samples, from a stream
    seeded with ``seed``; None: as the run's evaluations, its ``eval_deterministic``); returns the episode returns (a
    multi-agent env's: the mean over its agents, :func:`play_multiagent`). The env is the one ``canter play`` plays
    (:func:`play_env`): ``env``, an env id (None: the run's own), with the run's ``env_kwargs`` for its own env and
    ``env_kwargs`` merged over them. ``on_episode(i, return)`` is called as
    each episode ends (counted from 0; its video, if recorded, is finished by then). A recurrent agent's
    ``predict`` memory is left empty afterwards, as :func:`~canter.trainers.evaluation.evaluate` leaves it.
    ``vectorization`` (None: the run's own for its env, ``agent.run_config``, else ``auto``, as ``canter eval``
    picks it) chooses an Atari game's path (:func:`make_render_env`): a run trained on ale-py's native env is
    played on it, with the reset and frame stacks of its evaluations."""
    from canter.trainers.evaluation import check_episodes_and_seed

    check_episodes_and_seed(episodes, seed)
    episodes, seed = int(episodes), int(seed)  # NumPy's integers too (gymnasium's seeding takes int only)
    deterministic = bool_argument("deterministic", run_deterministic(agent) if deterministic is None else deterministic)
    render = bool_argument("render", render)  # 'no' would be truthy: a window opened
    if video_dir is not None and (not isinstance(video_dir, (str, os.PathLike)) or not str(video_dir).strip()):
        raise CanterError(f"video_dir must be a directory path (leave it out, None, to play without recording), "
                          f"got {video_dir!r}")
    env_id, env_kwargs = play_env(agent, env, env_kwargs)
    if render and video_dir:  # an env renders in one mode: the window was silently not opened
        raise CanterError("render (--render) and video_dir (--video-dir) cannot be combined: an env renders to a "
                          "window or to frames; give one of them")
    mode = "rgb_array" if video_dir else ("human" if render else None)
    if video_dir:
        check_video_dir(video_dir)
    if is_multiagent(env_id) and not is_turn_based(env_id):  # a turn-based game is one seat's env
        return play_multiagent(agent, env_id, episodes, mode, video_dir, seed, env_kwargs, on_episode, deterministic)
    if vectorization is None:
        vectorization = run_vectorization(getattr(agent, "run_config", None), env_id, env_kwargs)
    env = make_render_env(env_id, mode, seed, env_kwargs, vectorization)
    try:  # an error before the episodes (spaces, moviepy, a video folder that cannot be made) closes the env
        check_agent_spaces(agent, env_id, env.observation_space, env.action_space)
        if video_dir:
            require("moviepy", "video", "--video-dir")
            with warnings.catch_warnings():  # an existing folder: check_video_dir made sure no video of ours is in it
                warnings.filterwarnings("ignore", message=".*Overwriting existing videos")
                env = StreamingRecordVideo(env, video_dir, episode_trigger=lambda _: True, name_prefix="play",
                                           disable_logger=True)
        returns, act = [], eval_policy(agent, deterministic, seed)  # sampled: one stream for all the episodes
    except BaseException:
        env.close()
        raise
    try:
        for i in range(episodes):
            obs, _ = env.reset(seed=seed + i)
            if hasattr(agent, "begin_episodes"):  # a recurrent agent's memory starts empty
                agent.begin_episodes(np.ones(1, dtype=bool))
            done, total, starts = False, 0.0, np.ones(1, dtype=bool)
            while not done:
                action = act(np.asarray(obs)[None], starts)[0]
                starts = np.zeros(1, dtype=bool)
                obs, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                done = terminated or truncated
            returns.append(total)
            if on_episode is not None:
                on_episode(i, total)
    finally:
        env.close()
        _forget_episodes(agent, 1, deterministic)
    return returns


def _forget_episodes(agent: Any, n: int, deterministic: bool) -> None:
    """Leave a recurrent agent's ``predict`` memory (and, after sampled episodes, its exploring memory) empty for the
    caller's next call, as :func:`~canter.trainers.evaluation.evaluate` leaves them."""
    begin = getattr(agent, "begin_episodes", None)
    if begin is None:
        return
    begin(np.ones(n, dtype=bool))
    if not deterministic and getattr(agent, "explore", None) is not None:
        begin_exploring(agent, begin, n)


def play_env(agent: Any, env_id: str | None, env_kwargs: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """The env id and kwargs :func:`play` acts on, as ``canter play`` picks them: ``env_id`` (None: the run's own,
    ``agent.run_config.env``), built with the run's ``env_kwargs`` where it is the run's own env (a
    ``max_episode_steps`` it trained with, a turn-based game's copies of its frozen opponents) and ``env_kwargs``
    merged over them (``opponent: self`` refused, as :func:`canter.evaluate` refuses it)."""
    from canter.envs.opponents import run_env_kwargs
    from canter.envs.turns import check_given_opponent

    from canter.trainers.agent_metadata import agent_run_config

    run = agent_run_config(agent)  # a hand-built trainer's: the env it trains on
    own_id = getattr(run, "env", None)  # a run's env id (None: an agent without a run)
    if env_id is None and own_id is None:
        from canter.trainers.evaluation import one_policy_hint

        hint = one_policy_hint(agent)
        raise CanterError("play needs an env id for an agent without a run (one that canter.train, canter.load or "
                          "canter.make_agent returned plays its run's own env)" + (f"; {hint}" if hint else ""))
    if env_id is not None and (not isinstance(env_id, str) or not env_id.strip()):
        raise CanterError(f"env must be an env id (leave it out for the run's own), got {env_id!r}")
    if env_kwargs is not None and not isinstance(env_kwargs, dict):
        raise CanterError(f"env_kwargs must be a mapping, got {env_kwargs!r}")
    env_id = env_id or own_id
    check_given_opponent(env_id, env_kwargs, "env_kwargs")
    own = (getattr(run, "env_kwargs", None) or {}) if env_id == own_id else {}
    return env_id, run_env_kwargs(env_id, own, env_kwargs, getattr(agent, "run_dir", None))


def play_multiagent(agent: Any, env_id: str, episodes: int, mode: str | None, video_dir: str | None, seed: int,
                    env_kwargs: dict[str, Any] | None,
                    on_episode: Callable[[int, float], None] | None = None, deterministic: bool = True) -> list[float]:
    """:func:`play` on one copy of a PettingZoo parallel env (``pettingzoo:MODULE``), its agents
    acting with the run's policies as in training (``policies``, ``central_state`` of the agent's
    run); the factory gets ``render_mode=mode``. Each episode's return is the mean of its agents'
    returns (QMIX's joint agent: the team's), and its video is one file, ``play-episode-N.mp4``."""
    if video_dir:
        require("moviepy", "video", "--video-dir")
    run = getattr(agent, "run_config", None)
    settings = {"policies": getattr(run, "policies", "shared"), "central_state": getattr(run, "central_state", False)}
    kwargs = dict(env_kwargs or {})
    if mode is not None:
        kwargs["render_mode"] = mode
    from canter.envs.multiagent import trained_policies

    try:
        with trained_policies():  # a policy mode that does not fit: play takes no --set policies
            env = make_vec_env(env_id, 1, env_kwargs=kwargs, **settings)
    except CanterError:
        if mode is None or "render_mode" in (env_kwargs or {}):
            raise
        with trained_policies():
            make_vec_env(env_id, 1, env_kwargs=env_kwargs, **settings).close()  # fails too: that error is the one
        raise CanterError(f"'{env_id}' cannot render: its parallel_env() takes no render_mode, which --render and "
                          f"--video-dir pass") from None
    try:
        check_agent_spaces(agent, env_id, env.single_observation_space, env.single_action_space)
    except CanterError:
        env.close()
        raise
    parallel = getattr(env.env, "inner", env.env)  # the ParallelVectorEnv (a joint env wraps one)
    copy = parallel.envs[0]
    refused = _no_window_modes(env_id, getattr(copy, "metadata", None)) if mode == "human" else None
    if refused is not None:  # as a single-agent env's (make_render_env): no window, the episodes unseen
        env.close()
        raise refused
    returns, video = [], None
    try:
        for i in range(episodes):
            with sdl_complaints_held(mode if i == 0 else None):  # SDL's no-display lines before a refusal: dropped
                obs = env.reset(seed=seed + i)
                seed_random_policies(agent, seed + i)  # a random policy's moves too are the episode's seed's
                act = eval_policy(agent, deterministic, seed + i)  # sampled: the episode's seed's too
                starts = np.ones(env.num_envs, dtype=bool)
                if hasattr(agent, "begin_episodes"):
                    agent.begin_episodes(starts)
                # (after the first episode's first frame, a frame lost drops that episode's video, as
                # StreamingRecordVideo)
                frame, finished = _frame(copy, mode, env_id, strict=i == 0), []
                refused = drew_nowhere(env_id) if mode == "human" and i == 0 else None
                if refused is not None:  # pygame's window drew nowhere (the env is closed below)
                    raise refused
            name = f"play-episode-{i}"
            if video_dir and not isinstance(frame, np.ndarray):
                warn_frame_lost(name, frame)
            elif video_dir:  # each frame is written as it comes (none kept), play-episode-N.mp4 as save_video names it
                os.makedirs(video_dir, exist_ok=True)
                fps = getattr(copy, "metadata", {}).get("render_fps", 30)
                video = open_video(os.path.join(os.path.abspath(video_dir), f"{name}.mp4"), frame, fps)
            try:
                while True:
                    if video is not None:
                        video.write_frame(np.asarray(frame, dtype=np.uint8))
                    step = env.step(act(obs, starts))
                    valid = getattr(step, "valid", None)  # (a multi-policy env's steps have none)
                    starts = np.zeros(env.num_envs, dtype=bool) if valid is None else ~np.asarray(valid, dtype=bool)
                    if valid is not None and hasattr(agent, "begin_episodes"):  # an agent that joins or rejoins
                        agent.begin_episodes(starts)  # starts a trajectory with empty memory
                    finished.extend(env.finished_returns.tolist())
                    frame = _frame(copy, mode, env_id, strict=False)
                    if video is not None and not isinstance(frame, np.ndarray):  # it would not show the whole episode
                        video.discard()
                        video = None
                        warn_frame_lost(name, frame)
                    obs = step.obs
                    if parallel.ended[0]:  # every agent has ended: the next step would reset the copy
                        break
                if video is not None:
                    video.write_frame(np.asarray(frame, dtype=np.uint8))
                    video.close()
                    video = None
            finally:
                if video is not None:  # the episode was cut short (Ctrl-C, an error): no video under its name
                    video.discard()
                    video = None
            returns.append(float(np.mean(finished)))
            if on_episode is not None:
                on_episode(i, returns[-1])
    finally:
        env.close()
        _forget_episodes(agent, env.num_envs, deterministic)
    return returns


def _frame(env: Any, mode: str | None, env_id: str, strict: bool = True) -> Any:
    """Render one frame (rgb_array: the array, checked where ``strict``, else what ``render()`` gave; human: drawn on
    screen; None: nothing)."""
    if mode is None:
        return None
    frame = env.render()
    if mode == "rgb_array" and strict and not isinstance(frame, np.ndarray):
        raise CanterError(f"'{env_id}' returned no rgb_array frame from render() (got {type(frame).__name__}): "
                          f"it cannot be recorded")
    return frame
