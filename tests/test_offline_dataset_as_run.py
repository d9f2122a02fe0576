"""A dataset given where a run directory or checkpoint is expected (canter eval, play, collect, --resume,
canter.load) is named as a dataset, in one line that says how a dataset is used: it said "checkpoint PATH has no
valid 'config' in its metadata" (after reading all its tensors), or "'PATH' is a checkpoint"."""
from __future__ import annotations

import pytest

import canter
from canter.data.dataset import collect
from canter.errors import CanterError
from support import assert_one_line_error, run_cli


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "data"
    collect("CartPole-v1", 20, None, seed=0).save(path)
    return str(path)


@pytest.mark.parametrize("argv", [["eval", "{}"], ["play", "{}"], ["collect", "{}", "--out", "{}-out"],
                                  ["collect", "{}", "--from-replay", "--out", "{}-out"], ["train", "--resume", "{}"],
                                  ["eval", "{}.json"], ["train", "--resume", "{}.safetensors"]])
def test_a_dataset_given_as_a_run_is_named_as_a_dataset(dataset, capsys, argv):
    code, _, err = run_cli(capsys, *(a.format(dataset) for a in argv))
    assert_one_line_error(code, err, "is a dataset", "--dataset")


def test_canter_load_of_a_dataset_names_it(dataset):
    with pytest.raises(CanterError, match="is a dataset .*--dataset"):
        canter.load(dataset)
