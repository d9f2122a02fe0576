"""A dataset's JSON is not under its tensors' sha256: what it says is checked against what the file holds. A
``transitions`` count that disagreed with the arrays (5 against 3000) loaded without a word, and a JSON whose
``kind`` was not a dataset's was called "a canter checkpoint" whatever it was."""
from __future__ import annotations

import json

import pytest

from canter.data.dataset import TransitionDataset, collect
from canter.errors import CanterError
from checkpoint_support import write_checkpoint_json
from support import assert_one_line_error, run_cli, snapshot


def _edit(tmp_path, **changes):
    collect("CartPole-v1", 30, None, seed=0).save(tmp_path / "data")
    meta = tmp_path / "data.json"
    write_checkpoint_json(meta, {**json.loads(meta.read_text()), **changes})
    return tmp_path / "data"


def test_a_transition_count_that_disagrees_with_the_arrays_is_refused_in_one_line(tmp_path, capsys):
    data = _edit(tmp_path, transitions=5)
    with pytest.raises(CanterError, match=r"^dataset .*data is corrupt: its JSON says 5 transitions, its arrays hold 30"):
        TransitionDataset.load(data)
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, "train", "bc", "--dataset", str(data), "--quiet", "--run-dir", str(tmp_path / "new"))
    assert_one_line_error(code, err, "its JSON says 5 transitions, its arrays hold 30")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("count", ["30", 30.5, True, 0, -3])
def test_a_transition_count_that_is_not_a_whole_number_is_refused(tmp_path, count):
    with pytest.raises(CanterError, match=r"is corrupt: its JSON's 'transitions' is .*, not a whole number"):
        TransitionDataset.load(_edit(tmp_path, transitions=count))


def test_the_right_count_and_none_load(tmp_path):
    assert len(TransitionDataset.load(_edit(tmp_path, transitions=30))) == 30
    meta = tmp_path / "data.json"
    without = json.loads(meta.read_text())
    del without["transitions"]  # not written by another tool: nothing to check it against
    write_checkpoint_json(meta, without)
    assert len(TransitionDataset.load(tmp_path / "data")) == 30


def test_an_unexpected_kind_is_named_not_called_a_checkpoint(tmp_path, capsys):
    data = _edit(tmp_path, kind="canter-datset")
    code, _, err = run_cli(capsys, "train", "bc", "--dataset", str(data), "--quiet", "--run-dir", str(tmp_path / "new"))
    line = assert_one_line_error(code, err, "is not a canter dataset: its JSON's 'kind' is 'canter-datset', not "
                                            "'canter-dataset'")
    assert "checkpoint" not in line


def test_a_json_without_a_kind_is_still_a_checkpoint(tmp_path):
    meta = json.loads(_edit(tmp_path).with_suffix(".json").read_text())
    del meta["kind"]
    write_checkpoint_json(tmp_path / "data.json", meta)
    with pytest.raises(CanterError, match=r"is a canter checkpoint, not a dataset"):
        TransitionDataset.load(tmp_path / "data")
