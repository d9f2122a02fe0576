"""A dataset whose JSON metadata is damaged (edited by hand, written by another tool) is a one-line error that
calls the dataset corrupt and names it, from the CLI and from Python."""
from __future__ import annotations

import json

import pytest

from canter.data.dataset import TransitionDataset, collect
from canter.errors import CanterError
from checkpoint_support import write_checkpoint_json
from support import assert_one_line_error, run_cli

DAMAGES = {  # metadata key -> a value of the wrong kind, and what the error says
    "env_kwargs": ("abc", "'env_kwargs'"), "info": (5, "'info'"),
    "env": (None, "'env'"),
}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "data"
    collect("CartPole-v1", 30, None, seed=0).save(path)
    return path


def _damaged(dataset, tmp_path, key, value):
    path = tmp_path / f"bad-{key}"
    meta = json.loads(dataset.with_suffix(".json").read_text())
    if value is None:
        del meta[key]
    else:
        meta[key] = value
    path.with_suffix(".safetensors").write_bytes(dataset.with_suffix(".safetensors").read_bytes())
    write_checkpoint_json(path.with_suffix(".json"), meta)
    return path


@pytest.mark.parametrize("key", [*DAMAGES, "env_kwargs-list"])
def test_damaged_dataset_metadata_is_a_one_line_error_naming_the_dataset(dataset, tmp_path, capsys, key):
    """An env_kwargs or info that is not a mapping was a ValueError / TypeError traceback (exit 1) from
    resolve_config or TransitionDataset.load; a JSON without its env id said "unknown env id 'None'"."""
    value, needle = DAMAGES.get(key, ([1, 2], "'env_kwargs'"))
    path = _damaged(dataset, tmp_path, key.split("-")[0], value)
    code, _, err = run_cli(capsys, "train", "bc", "--dataset", str(path), "--max-steps", "10", "--run-dir",
                           str(tmp_path / "run"), "--quiet")
    assert_one_line_error(code, err, "corrupt", str(path), needle)
    assert not (tmp_path / "run").exists()
    with pytest.raises(CanterError, match="corrupt"):
        TransitionDataset.load(path)
