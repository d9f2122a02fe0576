"""NaN or infinite weights in a checkpoint (a run that diverged, or damaged bits that still parse) loaded silently and
then acted or trained with NaN: loading for a look warns naming the tensor, training from it is refused."""
from __future__ import annotations

import math
import shutil
import warnings

import pytest
import torch

import canter
from canter.checkpoint import load_checkpoint, save_checkpoint
from canter.checkpoint_finite import nonfinite_tensors
from canter.errors import CanterWarning
from support import assert_one_line_error, run_cli, snapshot

WEIGHT = "agent.algorithm.modules.model.body.weights.0"


def _poison(base, value=math.nan):
    """Write checkpoint ``base`` again (a consistent one: its sha256 and .json copy fit) with one weight ``value``."""
    state, meta = load_checkpoint(base)
    state["agent"]["algorithm"]["modules"]["model"]["body.weights.0"][0, 0] = value
    kept = {k: v for k, v in meta.items() if k not in ("sha256", "checkpoint_id", "state", "format", "format_version")}
    save_checkpoint(base, state, kept)


@pytest.fixture
def nan_run(finished_ppo_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(finished_ppo_run, run)
    _poison(run / "checkpoints" / "last")
    return run


def test_the_paths_of_nan_and_of_infinite_weights_are_found():
    """NaN anywhere in the agent's state; infinity only in its networks (SAC's log_alpha is -inf for ent_coef 0)."""
    state = {"algorithm": {"modules": {"m": {"w": torch.tensor([1.0, math.inf])}},
                           "extra": {"log_alpha": torch.tensor(-math.inf), "x": torch.tensor([math.nan])},
                           "optimizers": {"o": {"exp_avg": torch.tensor([math.nan])}},
                           "generator": torch.zeros(3, dtype=torch.uint8)}}
    assert nonfinite_tensors(state) == ["agent.algorithm.modules.m.w", "agent.algorithm.extra.x",
                                        "agent.algorithm.optimizers.o.exp_avg"]
    assert nonfinite_tensors(state, weights_only=True) == ["agent.algorithm.modules.m.w", "agent.algorithm.extra.x"]


def test_loading_nan_weights_warns_naming_the_tensor_and_still_loads(nan_run, finished_ppo_run):
    base = nan_run / "checkpoints" / "last"
    with pytest.warns(CanterWarning, match=f"checkpoint {base} holds NaN or infinite values in '{WEIGHT}'"):
        agent = canter.load(base)
    assert torch.isnan(agent.algorithm.model.body.weights[0]).any()  # loaded, to be inspected
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        canter.load(finished_ppo_run)  # the same run's finite weights: no warning


def test_resuming_from_nan_weights_is_refused_in_one_line(nan_run, capsys):
    before = snapshot(nan_run)
    code, _, err = run_cli(capsys, "train", "--resume", str(nan_run), "--max-steps", "512", "--quiet")
    assert_one_line_error(code, err, f"holds NaN or infinite values in '{WEIGHT}'", "resuming it would train")
    assert snapshot(nan_run) == before


def test_init_from_nan_weights_is_refused_in_one_line(nan_run, tmp_path, capsys):
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set",
                           f"init_from={nan_run / 'checkpoints' / 'last'}", "--quiet", "--run-dir", str(tmp_path / "new"),
                           "--max-steps", "64")
    assert_one_line_error(code, err, f"holds NaN or infinite values in '{WEIGHT}'", "init_from would train")
    assert not (tmp_path / "new" / "checkpoints").exists()


def test_float8_weights_are_looked_at_not_a_traceback(tmp_path):
    """A float8 tensor saves since 8369728b, but torch has no isfinite for float8: canter eval of a run whose model
    held a float8 buffer was a NotImplementedError traceback (the look for non-finite weights). It is upcast first."""
    from canter.checkpoint_finite import nonfinite_in_file

    ok = torch.ones(2, dtype=torch.float8_e4m3fn)
    bad = torch.tensor([1.0, math.inf]).to(torch.float8_e5m2)
    state = {"algorithm": {"modules": {"m": {"ok": ok, "bad": bad}}, "opt": {"nan": torch.full((1,), math.nan,
                                                                                            dtype=torch.float8_e5m2)}}}
    assert nonfinite_tensors(state) == ["agent.algorithm.modules.m.bad", "agent.algorithm.opt.nan"]
    base = save_checkpoint(tmp_path / "ck", {"agent": state}, {"step": 1})
    assert nonfinite_in_file(base) == ["agent.algorithm.modules.m.bad", "agent.algorithm.opt.nan"]


def test_init_from_a_damaged_checkpoint_with_nan_names_the_damage(nan_run, tmp_path, capsys):
    """A checkpoint both damaged (its sha256 no longer fits) and holding NaN was told 'holds NaN ... diverged, or
    damaged': the NaN look came before the integrity check, whose error names the cause."""
    tensors = nan_run / "checkpoints" / "last.safetensors"
    blob = bytearray(tensors.read_bytes())
    blob[-4] ^= 1  # a mantissa bit of the last value: the file still parses, the NaN stays
    tensors.write_bytes(bytes(blob))
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", f"init_from={tensors}",
                           "--quiet", "--run-dir", str(tmp_path / "new"), "--max-steps", "64")
    assert_one_line_error(code, err, f"init_from: checkpoint {tensors} is corrupt: its sha256 differs")
    assert "NaN" not in err
