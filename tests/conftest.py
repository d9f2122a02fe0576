"""Shared test setup: one torch thread, offline W&B, no network."""
import os

os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
if "SB3_LOGDIR" not in os.environ:  # SB3's learn() makes a /tmp/SB3-<time> folder per model without it
    import atexit
    import shutil
    import tempfile

    os.environ["SB3_LOGDIR"] = tempfile.mkdtemp(prefix="canter-tests-sb3-")
    atexit.register(shutil.rmtree, os.environ["SB3_LOGDIR"], True)

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def finished_ppo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny finished PPO CartPole run from ``canter.train`` (checkpoints, history, one evaluation, a summary)."""
    import canter

    run_dir = tmp_path_factory.mktemp("good") / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=256, n_envs=2, n_steps=64, eval_episodes=1,
                 eval_every=0, tensorboard=False)
    return run_dir


@pytest.fixture
def tiny_ppo() -> dict:
    """Run-config overrides for a PPO run that finishes in about a second."""
    return dict(max_steps=512, n_envs=2, eval_episodes=2, eval_every=0, n_steps=64, batch_size=64, n_epochs=2)


@pytest.fixture
def restore_global_rngs():
    """Put Python's, NumPy's and torch's global random states back after the test (for tests that
    build Stable-Baselines3 models with a seed, which reseeds all three process-wide)."""
    import random

    import numpy as np

    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    yield
    random.setstate(states[0])
    np.random.set_state(states[1])
    torch.set_rng_state(states[2])


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty current directory, so an 'auto' run dir (runs/...) would show up here."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    """``host:port`` of the test session's Ray cluster (2 CPUs on loopback, shared by the test modules of Ray
    explorers; started once, stopped at the end; skipped without Ray), without token authentication whether or not
    ``~/.ray/auth_token`` exists (``ray start`` turns it on when that file exists, and a local ``ray.init``
    writes it). Test modules that use it import Ray with ``pytest.importorskip`` first."""
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # every listener on 127.0.0.1
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    pytest.importorskip("ray")
    from support import ray_cluster

    with ray_cluster(tmp_path_factory.mktemp("ray") / "ray-start.log", "disabled") as address:
        yield address
