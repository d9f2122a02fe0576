"""A run directory whose checkpoints/best.json is there without best.safetensors: play, eval and canter.load use
the last checkpoint (the docs' 'best, else last') and warn which file is missing."""
from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from canter.checkpoint_find import find_checkpoint
from canter.errors import CanterWarning


def _run(tmp_path: Path, *files: str) -> Path:
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text("algo: ppo\n")
    for name in files:
        (run / "checkpoints" / name).write_text("{}")
    return run


def test_best_without_tensors_falls_back_to_last_with_a_warning(tmp_path: Path) -> None:
    run = _run(tmp_path, "best.json", "last.json", "last.safetensors")
    with pytest.warns(CanterWarning, match=r"best\.safetensors is missing.*using the last checkpoint"):
        assert find_checkpoint(run) == run / "checkpoints" / "last"


def test_best_without_tensors_and_no_last_is_still_best(tmp_path: Path) -> None:
    run = _run(tmp_path, "best.json")  # nothing to fall back to: loading best names the missing file
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert find_checkpoint(run) == run / "checkpoints" / "best"


def test_whole_best_is_chosen_without_a_warning(tmp_path: Path) -> None:
    run = _run(tmp_path, "best.json", "best.safetensors", "last.json", "last.safetensors")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert find_checkpoint(run) == run / "checkpoints" / "best"


def test_best_without_tensors_and_a_partial_last_is_still_best(tmp_path: Path) -> None:
    run = _run(tmp_path, "best.json", "last.json")  # last is no whole fallback: no 'using the last' warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert find_checkpoint(run) == run / "checkpoints" / "best"


def test_the_fallback_warning_names_the_callers_line(tmp_path: Path) -> None:
    """It was attributed to canter/api.py (warnings.warn's stacklevel=2 inside canter.load), not the user's line."""
    import canter
    from support import untrained_agent

    run = _run(tmp_path, "best.json")
    untrained_agent("ppo", "CartPole-v1", n_envs=1, n_steps=64).save(run / "checkpoints" / "last")
    with pytest.warns(CanterWarning, match=r"best\.safetensors is missing") as caught:
        canter.load(run)
    assert [w.filename for w in caught if "missing" in str(w.message)] == [__file__]
