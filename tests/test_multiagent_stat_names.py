"""A policy's rolling return and losses are named in TensorBoard as docs/multiagent.md says: the docs said
`policy/rolling_return` for updates.parquet and TensorBoard alike, where TensorBoard and W&B show it, as every update
statistic, under `losses/` (losses/listener/rolling_return); the docs now name both."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from support import HPARAMS, MIXED  # noqa: E402

DOC = " ".join((Path(__file__).parents[1] / "docs" / "multiagent.md").read_text().split())


def test_the_tensorboard_names_of_a_policys_statistics_are_the_documented_ones(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_dir = tmp_path / "run"
    canter.train("ppo", env=MIXED, policies="type", seed=0, max_steps=512, target_reward=None, run_dir=run_dir,
                 **{**HPARAMS["ppo"], "n_envs": 2, "eval_every": 10_000})
    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {"losses/listener/rolling_return", "losses/speaker/rolling_return", "charts/rolling_return"} <= tags
    for documented in ("`losses/policy/rolling_return`", "`losses/policy/name`", "`losses/adversary/rolling_return`"):
        assert documented in DOC
    assert not any(t.startswith(("listener/", "speaker/")) for t in tags)  # no unprefixed copy
