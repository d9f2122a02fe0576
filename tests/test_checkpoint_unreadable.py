"""A checkpoint file that is there but cannot be read as a file (a directory in its place) is named as such, not
as bad JSON or a device error."""
from __future__ import annotations

import pytest
import torch

from canter.checkpoint import load_checkpoint, read_metadata, save_checkpoint
from canter.errors import CanterError


@pytest.mark.parametrize("read", [load_checkpoint, read_metadata])
@pytest.mark.parametrize("suffix", [".json", ".safetensors"])
def test_a_directory_in_place_of_a_checkpoint_file_is_named_a_directory(tmp_path, read, suffix):
    base = save_checkpoint(tmp_path / "ck", {"w": torch.ones(3)}, {"step": 1})
    path = base.with_name(base.name + suffix)
    path.unlink()
    path.mkdir()
    with pytest.raises(CanterError) as info:
        read(base)
    message = str(info.value)
    assert f"{path} is a directory" in message, message
    assert "not valid JSON" not in message and "os error" not in message


@pytest.mark.parametrize("suffix", [".json", ".safetensors"])
def test_saving_where_a_checkpoint_file_is_a_directory_is_refused_and_writes_nothing(tmp_path, suffix):
    """A directory in place of the .json was an IsADirectoryError traceback after the .safetensors was written (and a
    directory in place of the .safetensors an OSError from the rename)."""
    (tmp_path / f"ck{suffix}").mkdir()
    with pytest.raises(CanterError, match=f"{tmp_path / ('ck' + suffix)} is a directory, not a file"):
        save_checkpoint(tmp_path / "ck", {"w": torch.ones(3)}, {"step": 1})
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"ck{suffix}"]


@pytest.mark.parametrize("suffix", [".json", ".safetensors"])
def test_a_directory_in_place_of_a_dataset_file_names_a_dataset(tmp_path, suffix):
    """A dataset's file pair (canter collect --out) read as 'dataset': the error said 'pass another checkpoint'."""
    base = save_checkpoint(tmp_path / "d", {"w": torch.ones(3)}, {"kind": "dataset"})
    path = base.with_name(base.name + suffix)
    path.unlink()
    path.mkdir()
    with pytest.raises(CanterError) as info:
        read_metadata(base, "dataset")
    assert f"{path} is a directory" in str(info.value) and str(info.value).endswith("pass another dataset")
