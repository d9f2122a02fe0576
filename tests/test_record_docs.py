"""The typed records a trainer yields and an evaluation returns say what each of their fields is, where
``help(TrainRecord)`` shows it: their docstrings name every field (``help`` showed a one-line docstring and the
fields' names alone; what ``wall_time``, ``rolling_return`` or ``new_best`` held was in no docstring)."""
from __future__ import annotations

import dataclasses
import pydoc
import re

import gymnasium as gym
import pytest

import canter
from canter.trainers.evaluation import EvalResult
from canter.trainers.records import EpisodeInfo, TrainRecord


@pytest.mark.parametrize("cls", [TrainRecord, EpisodeInfo, EvalResult], ids=lambda c: c.__name__)
def test_help_describes_every_field(cls):
    text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    described = set(re.findall(r"^\s*\|?\s*(\w+): \S", text, re.MULTILINE))
    missing = [f.name for f in dataclasses.fields(cls) if f.name not in described]
    assert not missing, f"help({cls.__name__}) does not describe {missing}"


def test_the_step_fields_say_what_an_offline_run_counts():
    """An offline run's records count gradient updates in ``step`` (its env steps: none); help(TrainRecord) said 'env
    steps so far' and 'env steps per second' alone."""
    import numpy as np

    from canter.config import resolve_config
    from canter.data.dataset import TransitionDataset
    from canter.trainers.offline import OfflineTrainer

    rng, n, space = np.random.default_rng(0), 64, gym.spaces.Box(-1, 1, (4,), np.float32)
    data = TransitionDataset(rng.normal(size=(n, 4)).astype(np.float32), rng.integers(0, 2, n), np.ones(n, np.float32),
                             rng.normal(size=(n, 4)).astype(np.float32), np.zeros(n, bool), np.zeros(n, bool),
                             "CartPole-v1", space, gym.spaces.Discrete(2))
    run, cfg = resolve_config("bc", "CartPole-v1", None, ["max_steps=6", "gradient_steps=3", "batch_size=8",
                                                          "eval_episodes=0"])
    agent = canter.make_agent(run, cfg, space, gym.spaces.Discrete(2))
    records = list(OfflineTrainer(agent, data, None, run)())
    assert [(r.step, r.iteration) for r in records] == [(3, 1), (6, 2)]  # updates, not env steps
    text = pydoc.render_doc(TrainRecord, renderer=pydoc.plaintext)
    for field_name in ("step", "iteration", "steps_per_second"):
        line = re.search(rf"^\s*\|?\s*{field_name}: (.*(?:\n\s*\|?\s{{5,}}.*)*)", text, re.MULTILINE)[1]
        assert "offline" in line, (field_name, line)


def test_architecture_docs_say_what_an_offline_runs_steps_per_second_counts():
    """37eb0840 said in help(TrainRecord) that an offline run's steps_per_second is updates per second, but
    docs/architecture.md's updates.parquet columns and its metric table (charts/steps_per_second) still said env
    steps alone."""
    from pathlib import Path

    text = (Path(__file__).parent.parent / "docs" / "architecture.md").read_text()
    metric = next(line for line in text.splitlines() if line.startswith("| `charts/steps_per_second`"))
    column = text[text.index("steps_per_second:\n"):][:200]
    assert "offline" in metric and "updates" in metric, metric
    assert "offline" in column and "updates" in column, column
