"""A seeded run's global random streams (Python's ``random``, NumPy's legacy ``np.random``, torch's) start training
where the seed put them, whatever making the run directory's loggers draws: an env or a hook that uses them gets the
same numbers from ``canter train`` (the console shown) as from ``canter.train`` (quiet)."""
import random
import subprocess
import sys

import numpy as np
import pytest
import torch

import canter
import canter.api


def _first_draws(tmp_path, name, quiet=True):
    """The global streams' first draws at the start of training of a 64-step PPO run of seed 3."""
    seen = {}

    def at_start(trainer):
        seen["draws"] = (random.random(), float(np.random.random()), float(torch.rand(1)))

    canter.train("ppo", env="CartPole-v1", seed=3, max_steps=64, n_steps=32, n_envs=2, eval_episodes=0,
                 run_dir=tmp_path / name, quiet=quiet, hooks={"on_train_start": at_start})
    return seen["draws"]


def test_making_the_loggers_does_not_move_the_streams(tmp_path, monkeypatch):
    plain = _first_draws(tmp_path, "plain")
    made = canter.api.default_loggers

    def drawing_loggers(*args, **kwargs):  # as rich's import does (rich.style: count(getrandbits(24)))
        random.getrandbits(24), np.random.random(), torch.rand(1)
        return made(*args, **kwargs)

    monkeypatch.setattr(canter.api, "default_loggers", drawing_loggers)
    assert _first_draws(tmp_path, "drawn") == plain


_SCRIPT = """
import random, sys, canter
seen = []
canter.train("ppo", env="CartPole-v1", seed=3, max_steps=64, n_steps=32, n_envs=2, eval_episodes=0,
             run_dir=sys.argv[1], quiet=sys.argv[2] == "quiet",
             hooks={"on_train_start": lambda trainer: seen.append(random.random())})
print(seen[0])
"""


@pytest.mark.slow
def test_the_console_shown_in_a_fresh_process_gives_the_quiet_runs_streams(tmp_path):
    """The real case: rich, imported with the console's logger after the seeding, drew from ``random``."""
    out = [subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path / q), q], capture_output=True, text=True,
                          check=True).stdout.split()[-1] for q in ("quiet", "shown")]
    assert out[0] == out[1]
