"""Small pieces shared by several test files (not a test module itself)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import canter
from canter.cli import main
from canter.trainers.evaluation import EvalResult


def forget_run_key(run_dir: Path, key: str) -> None:
    """Make ``run_dir`` look as a canter saved it before the run setting ``key`` existed: the key leaves its
    ``checkpoints/last.json`` config and its ``config.yaml``."""
    import json

    import yaml

    meta_path = Path(run_dir) / "checkpoints" / "last.json"
    meta = json.loads(meta_path.read_text())
    del meta["config"][key]
    from checkpoint_support import write_checkpoint_json

    write_checkpoint_json(meta_path, meta)
    config_path = Path(run_dir) / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    del config[key]
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))


def untrained_agent(algo: str, env: str, max_steps: int = 64, **kw):
    """The agent of a short trainer that is made and closed, never run (seed 0)."""
    trainer = canter.make_trainer(algo, env, seed=0, max_steps=max_steps, **kw)
    trainer.close()
    return trainer.agent


class FixedLengthEnv(gym.Env):
    """Episodes of ``length`` steps of reward 1, ending truncated (``truncates``) or terminated; zero observations.
    Its constructor takes no arguments (no ``render_mode`` either)."""

    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)
    length, truncates = 5, True

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        end = self.t >= self.length
        return np.zeros(2, np.float32), 1.0, end and not self.truncates, end and self.truncates, {}


class Box22Actions(gym.Env):
    """Actions of shape (2, 2); the reward is highest at 0.5 everywhere; truncated after 20 steps."""

    observation_space = gym.spaces.Box(-1, 1, (3,), np.float32)
    action_space = gym.spaces.Box(-1, 1, (2, 2), np.float32)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(3, np.float32), {}

    def step(self, action):
        assert action.shape == (2, 2), action.shape
        self.t += 1
        return np.zeros(3, np.float32), -float(np.sum((action - 0.5) ** 2)), False, self.t >= 20, {}


class ScalarAction(Box22Actions):
    """A scalar Box action (shape ``()``, bounds -2 and 3): the env asserts the shape on every step."""

    action_space = gym.spaces.Box(-2, 3, (), np.float32)

    def step(self, action):
        assert np.shape(action) == () and -2 <= action <= 3, action
        self.t += 1
        return np.zeros(3, np.float32), -float((action - 0.5) ** 2), False, self.t >= 20, {}


def scripted(trainer, returns: list[float]) -> list[float]:
    """Replace the trainer's evaluation by a scripted sequence of mean returns; returns the log."""
    seen: list[float] = []

    def evaluate():
        value = returns[len(seen)]
        seen.append(value)
        trainer.evaluations += 1
        return EvalResult(value, 0.0, [value], [1])

    trainer.evaluate = evaluate
    return seen


def register_unsaveable(base_id: str, name: str) -> str:
    """Register env ``name``: ``base_id`` holding an object the env snapshot cannot copy (a lock), so a
    resume of its run starts fresh episodes (``resume_exact`` False). Returns ``name``."""
    import threading

    from canter.registry import register

    class Locked(gym.Wrapper):
        def __init__(self, **kw):
            super().__init__(gym.make(base_id, **kw))
            self.lock = threading.Lock()  # no way to save this

    register("env", name)(Locked)
    return name


def stop_at_300(trainer, losses) -> None:
    """``after_update`` hook: from step 300 of a run that is not itself a resume, ask for the stop a first
    Ctrl-C / SIGTERM asks for (mid-episode for CartPole and Pendulum)."""
    if trainer.step >= 300 and trainer.resume_exact is None and trainer.stop_requested is None:
        trainer.stop_requested = "interrupted"


def state_after_inexact_resume(algo: str, base_id: str, name: str, probe, run_dir, hook: str = "before_collect",
                               between=None, **kw):
    """Train ``algo`` on an unsaveable copy of ``base_id`` (:func:`register_unsaveable` as ``name``) until
    the stop at step 300, call ``between(run_dir)`` if given, resume, and return ``(resume_exact,
    probe(trainer))`` taken at the resumed run's first ``hook`` call."""
    import canter

    env = register_unsaveable(base_id, name)
    seen: list = []

    def first(trainer, *args):
        if trainer.resume_exact is not None and not seen:
            seen.append((trainer.resume_exact, probe(trainer)))

    canter.train(algo, env, run_dir=run_dir, hooks={"after_update": stop_at_300}, **kw)
    if between is not None:
        between(run_dir)
    canter.resume(run_dir, hooks={hook: first})
    return seen[0]


def best_eval(algo: str, **kwargs: object) -> tuple[float, object]:
    """Run an offline trainer to its end; its best evaluation return and the trainer."""
    trainer = canter.make_trainer(algo, **kwargs)
    try:
        for _ in trainer():
            pass
    finally:
        trainer.close()
    return trainer.best_eval_return, trainer


# -- the multi-agent tests' envs (tests/match_agents.py, tests/mixed_agents.py) and run settings --------------
ENV = "pettingzoo:tests.match_agents"

HPARAMS = {"ppo": dict(n_envs=4, eval_every=2048, n_steps=64, batch_size=128, n_epochs=4),
           "dqn": dict(n_envs=2, eval_every=1000, learning_starts=500, exploration_fraction=0.3, train_freq=4,
                       gradient_steps=1, net_arch=[32], target_update_interval=200, lr=1e-3)}

# several policies (policies: type | agent)
MIXED = "pettingzoo:tests.mixed_agents"


# -- the recurrent tests' memory task (tests/memory_env.py: name a cue shown steps before) and its settings -----
CUE = "memory_env:Cue-v0"
CUE_HP = dict(lr=1e-3, n_steps=64, batch_size=128, n_epochs=4, ent_coef=0.01, lstm_hidden=32, n_envs=8)


# -- the Atari tests' observations: 4 stacked 84x84 frames --------------------------------------------------
FRAMES = (4, 84, 84)


def filled_frame_replays(env_id: str, n: int, vectorization: str, capacity: int, steps: int,
                         env_kwargs: dict | None = None) -> tuple:
    """A frame-once ``FrameStackReplay`` and a plain ``ReplayBuffer`` filled with the same ``steps`` random-action
    vector steps of an Atari env's training preprocessing (episodic life: many episode starts; RGB frames with
    ``env_kwargs`` ``grayscale: false``); returns
    ``(lean, full, observation shape, episode ends seen)``."""
    from canter.data.framestack import FrameStackReplay
    from canter.data.replay import ReplayBuffer
    from canter.envs import make_vec_env
    from canter.envs.atari_rgb import frame_channels

    env = make_vec_env(env_id, n, vectorization, training=True, env_kwargs=env_kwargs)
    shape = env.single_observation_space.shape
    lean = FrameStackReplay(capacity, shape, (), np.uint8, np.int64, n_envs=n, seed=0,
                            frame_channels=frame_channels(env_id, env_kwargs))  # RGB (grayscale: false): 3
    full = ReplayBuffer(capacity, shape, (), np.uint8, np.int64, n_envs=n, seed=0)
    obs, rng, ends = env.reset(seed=0), np.random.default_rng(0), 0
    for _ in range(steps):
        a = rng.integers(0, 4, size=n)
        step = env.step(a)
        for buf in (lean, full):
            buf.add(obs, a, step.reward, step.obs, step.terminated, step.valid, step.truncated)
        ends += int((step.terminated | step.truncated).sum())
        obs = step.obs
    env.close()
    return lean, full, shape, ends


# -- the hook and stopping tests' tiny PPO run: 2 envs x 16 steps = 32 env steps per iteration; eval_every=32: one
# evaluation per iteration
HOOKS_TINY = dict(n_envs=2, n_steps=16, batch_size=32, n_epochs=1, eval_every=32, eval_episodes=1, max_steps=640,
                  tensorboard=False)


# -- the off-policy tests' tiny runs -------------------------------------------------------------------------
TINY = dict(net_arch=[16], learning_starts=32, batch_size=16, eval_every=0, eval_episodes=1)


# -- the CLI tests' helpers: run ``canter`` in-process, check its one-line errors, snapshot a directory ---------
TINY_ARGV = ["--max-steps", "256", "--n-envs", "2", "--set", "n_steps=64", "--eval-episodes", "1", "--quiet"]
"""The flags of a tiny PPO CartPole run from the CLI (the CLI tests import it as ``TINY``)."""


def interrupted_tiny_ppo(run_dir: Path, tiny_ppo: dict, logger: object) -> object:
    """Train a tiny PPO CartPole run into ``run_dir`` with ``logger`` added after canter's own, expecting the
    KeyboardInterrupt that logger causes (at its start or close); the trainer is closed and returned."""
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, **{**tiny_ppo, "max_steps": 128},
                              tensorboard=False)
    run.loggers.append(logger)
    with pytest.raises(KeyboardInterrupt):
        for _ in run():
            pass
    run.trainer.close()
    return run


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    """Run ``canter ARGV`` in-process; return (exit code, stdout, stderr)."""
    capsys.readouterr()  # drop anything printed before
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's --help exits through sys.exit
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


def run_cli_paths(capsys: pytest.CaptureFixture, *argv: object) -> tuple[int, str, str]:
    """``run_cli`` of arguments given as they are (paths, numbers), each passed as ``str``."""
    return run_cli(capsys, *map(str, argv))


def assert_one_line_error(code: int, err: str, *needles: str) -> str:
    """Exit 2, one stderr line starting with 'canter: error:', no traceback, containing every needle."""
    assert code == 2, f"exit code {code}, stderr: {err!r}"
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, f"expected exactly one stderr line, got {len(lines)}: {err!r}"
    line = lines[0]
    assert line.startswith("canter: error:"), line
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line


def assert_train_refused(capsys: pytest.CaptureFixture, tmp_path: Path, argv: list[str], needle: str) -> None:
    """``canter ARGV --quiet --run-dir <tmp>/run`` fails in one line naming ``needle`` and writes no run directory."""
    code, _, err = run_cli(capsys, *argv, "--quiet", "--run-dir", str(tmp_path / "run"))
    assert_one_line_error(code, err, needle)
    assert not (tmp_path / "run").exists()


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (relative) -> its bytes (None for directories)."""
    return {
        str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }


def run_python(code: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -c code`` in a fresh process that imports this canter (the checkout these tests belong to)."""
    root = Path(canter.__file__).resolve().parents[1]
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=str(root)))


def assert_masks_packed(env, width: int, targets, steps: int = 3) -> None:
    """``env`` (a canter VecEnv of the masked test envs) packs each sub-env's current mask after its
    observation's first ``width`` entries, at the reset and ``steps`` steps on (acting ``targets(sub_env)``)."""
    obs = env.reset(seed=0)
    for _ in range(steps):
        for row, e in zip(obs, env.env.envs):
            np.testing.assert_array_equal(row[width:], e.unwrapped.mask)
        obs = env.step(np.stack([targets(e.unwrapped) for e in env.env.envs])).obs
    env.close()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    """Whether something listens on 127.0.0.1:``port``."""
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def ray_test_env() -> dict[str, str]:
    """The environment of a process that Ray workers of the test cluster must import test modules in."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), *sys.path])}


@contextmanager
def ray_cluster(log_path: Path, auth_mode: str):
    """``host:port`` of a 2-CPU Ray cluster on loopback with ``RAY_AUTH_MODE=auth_mode``, stopped
    (all its processes) afterwards (docs: /work/shared/RAY.md's rules)."""
    import ray

    from canter.distributed.cluster import AUTH_MODE_ENV

    port = free_port()
    ray_cli = Path(sys.executable).with_name("ray")
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [str(ray_cli), "start", "--head", "--block", "--node-ip-address=127.0.0.1", f"--port={port}",
         "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats"],
        env={**ray_test_env(), AUTH_MODE_ENV: auth_mode}, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not listening(port):
            assert proc.poll() is None and time.monotonic() < deadline, "ray start --head failed"
            time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        if ray.is_initialized():
            ray.shutdown()
        proc.terminate()  # `ray start --block` stops every process of the cluster when it ends
        proc.wait(60)
        log.close()
    time.sleep(1)
    assert not listening(port), "the test cluster is still running"


def atari_dqn_argv(game: str, env_kwargs: str, vectorization: str, run_dir, steps: int) -> list[str]:
    """``canter train dqn`` on a small Atari setup (2 envs, tiny buffer and network, no evaluation)."""
    return ["train", "dqn", "--env", game, "--n-envs", "2", "--vectorization", vectorization, "--env-kwargs",
            env_kwargs, "--set", "buffer_size=61", "--set", "learning_starts=10", "--set", "batch_size=4", "--set",
            "train_freq=2", "--set", "net_arch=[32]", "--eval-episodes", "0", "--quiet", "--max-steps", str(steps),
            "--run-dir", str(run_dir)]


def assert_resumed_atari_dqn_is_uninterrupted(tmp_path: Path, game: str, env_kwargs: str) -> dict[str, np.ndarray]:
    """Train 20 steps and resume to 60, then train 60 in one go (sync wrapper path): the resume is exact and both
    ``last`` checkpoints are equal; returns the resumed run's (run dir ``tmp_path / 'a'``)."""
    import json

    from safetensors.numpy import load_file

    assert main(atari_dqn_argv(game, env_kwargs, "sync", tmp_path / "a", 20)) == 0
    assert main(["train", "--resume", str(tmp_path / "a"), "--max-steps", "60", "--quiet"]) == 0
    assert main(atari_dqn_argv(game, env_kwargs, "sync", tmp_path / "b", 60)) == 0
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["resume_exact"] is True
    a, b = (load_file(str(tmp_path / r / "checkpoints" / "last.safetensors")) for r in "ab")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    return a


def native_atari_run_reaches_eval_and_play(capsys: pytest.CaptureFixture, run: Path, argv: list[str]) -> None:
    """Train ``argv`` (an :func:`atari_dqn_argv` on the native path) into ``run`` with 400-frame evaluation games,
    then ``canter eval --json`` and ``canter play`` of one episode each succeed."""
    import json

    assert main(argv + ["--set", "eval_env_kwargs={max_num_frames_per_episode: 400}"]) == 0
    code, out, err = run_cli(capsys, "eval", str(run), "--episodes", "1", "--json")
    assert code == 0 and json.loads(out)["episodes"] == 1, err
    code, out, err = run_cli(capsys, "play", str(run), "--episodes", "1")
    assert code == 0 and out.startswith("episode 1: return"), err


def _leaves(state, prefix: str = "") -> dict:
    """The tensors and arrays of a nested state dict, by path."""
    import torch

    if isinstance(state, dict):
        return {k: v for key, sub in state.items() for k, v in _leaves(sub, f"{prefix}/{key}").items()}
    return {prefix: state} if isinstance(state, (torch.Tensor, np.ndarray)) else {}


def same_weights(a, b) -> bool:
    """Whether two objects with ``state_dict()`` (agents, trainers) hold the same tensors and arrays, bit for bit."""
    theirs, ours = _leaves(a.state_dict()), _leaves(b.state_dict())
    return len(ours) > 0 and theirs.keys() == ours.keys() and all(
        np.array_equal(np.asarray(theirs[k]), np.asarray(ours[k])) for k in ours)


def commit_repo(where: Path, name: str = "a.txt", text: str = "a") -> str:
    """A git repository at ``where`` with one commit of the file ``name``; returns its short (8-char) sha."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(where)]
    subprocess.run(git + ["init", "-q"], check=True)
    (where / name).write_text(text)
    subprocess.run(git + ["add", name], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "a"], check=True)
    return subprocess.run(git + ["rev-parse", "--short=8", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def closing_warnings(env) -> list[str]:
    """The canter warnings ``env.close()`` gives, with the once-per-process memory of close errors cleared first."""
    import warnings

    from canter.envs.vector import _CLOSE_WARNED
    from canter.errors import CanterWarning

    _CLOSE_WARNED.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env.close()
    return [str(w.message) for w in caught if issubclass(w.category, CanterWarning)]


@pytest.fixture(autouse=True)
def default_sigterm() -> Iterator[None]:
    """SIGTERM at its default action for each test, as in a fresh `canter train`, and put back after: an earlier
    test's ray.init leaves Ray's own handler (sys.exit(15)) in force in this process while the session's cluster is
    up, and a run takes SIGTERM over only where it still has its default action. Autouse in the modules that import
    it."""
    before = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGTERM, before)


def frame_env_maker(name: str, steps: int, reward: float, frame: Any) -> Any:
    """A gymnasium entry point (``render_mode`` its one argument) of a ``steps``-step env with one Box observation
    (the step count), ``reward`` a step, 15 fps, whose ``render()`` at step ``t`` returns ``frame(t)``: the frames a
    video test checks."""

    class FrameEnv(gym.Env):
        metadata = {"render_modes": ["rgb_array"], "render_fps": 15}
        observation_space = gym.spaces.Box(0.0, float(steps), (1,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def __init__(self, render_mode: str | None = None) -> None:
            self.render_mode, self.t = render_mode, 0

        def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
            super().reset(seed=seed)
            self.t = 0
            return np.zeros(1, np.float32), {}

        def step(self, action: Any) -> Any:
            self.t += 1
            return np.full(1, self.t, np.float32), reward, self.t == steps, False, {}

        def render(self) -> Any:
            return frame(self.t)

    FrameEnv.__name__ = FrameEnv.__qualname__ = name
    return FrameEnv


class StubLogger:
    """A logger for tests of how a run closes its loggers: it records that it was closed (``closed``) and whether
    SIGTERM still had its default action then (``default_at_close``); with ``term`` its close() meets a SIGTERM, as a
    W&B finish that `timeout` or a job scheduler stops (sent only where SIGTERM no longer has its default action,
    which would end the test process)."""

    def __init__(self, term: bool = False) -> None:
        self.term, self.closed = term, False
        self.default_at_close: bool | None = None

    def start(self, run: Any) -> None:  # noqa: D102
        pass

    def log(self, record: Any) -> None:  # noqa: D102
        pass

    def close(self) -> None:  # noqa: D102
        self.closed = True
        self.default_at_close = signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
        if self.term and not self.default_at_close:
            os.kill(os.getpid(), signal.SIGTERM)
