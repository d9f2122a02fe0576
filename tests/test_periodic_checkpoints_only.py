"""A run directory whose checkpoints/ holds periodic ``step-N`` checkpoints but no ``best`` or ``last`` (deleted, or a
process killed between two saves): ``canter eval``/``play``/``collect`` said it "has no checkpoint yet", and
``canter report`` failed as a whole (exit 2, no report) on that error while drawing the return distribution."""
from __future__ import annotations

import pytest
import torch

from canter.checkpoint import find_checkpoint, save_checkpoint
from canter.errors import CanterError


def _run_with_steps_only(root):
    ckpts = root / "checkpoints"
    ckpts.mkdir(parents=True)
    (root / "config.yaml").write_text("algo: ppo\nenv: CartPole-v1\nseed: 0\nn_envs: 1\n")
    for step in (512, 1024):  # checkpoints that load (the report's table lists only those)
        save_checkpoint(ckpts / f"step-{step}", {"w": torch.ones(1)}, {"step": step})
    return root


def test_eval_names_a_periodic_checkpoint_to_pass(tmp_path):
    run = _run_with_steps_only(tmp_path / "run")
    with pytest.raises(CanterError, match=r"has no checkpoints/best or checkpoints/last; pass one of its periodic "
                                          rf"checkpoints, e.g. '{run / 'checkpoints' / 'step-1024'}'"):
        find_checkpoint(run)


def test_report_skips_the_distribution_instead_of_failing(tmp_path, monkeypatch):
    from canter.tools import report
    from canter.tools.report import write_report

    for panel in ("learning_curve", "update_stats", "throughput"):  # no run tables here: only the matplotlib time
        monkeypatch.setattr(report, panel, lambda run: "")

    run = _run_with_steps_only(tmp_path / "run")
    text = write_report(run, eval_episodes=5).read_text()
    assert "Skipped (no best or last checkpoint, or --eval-episodes 0)" in text
    assert "step-1024" in text  # the checkpoint table still lists them


def test_the_runs_checkpoints_folder_names_a_periodic_checkpoint_too(tmp_path):
    """find_checkpoint takes a run's checkpoints/ folder as well; there (no config.yaml) the periodic ones were not
    looked for: "is not a canter run directory (no config.yaml or checkpoints/)"."""
    run = _run_with_steps_only(tmp_path / "run")
    with pytest.raises(CanterError, match=r"has no checkpoints/best or checkpoints/last; pass one of its periodic "
                                          rf"checkpoints, e.g. '{run / 'checkpoints' / 'step-1024'}'"):
        find_checkpoint(run / "checkpoints")
