"""A ``.safetensors`` read without its ``.json`` (deleted, or one save behind) gives its metadata from its header's
``canter_meta``, which ``content_sha256`` covers: :func:`canter.checkpoint.read_metadata` (what a dataset's
``user_modules`` are imported from, before the tensors are loaded) checks it too, not only ``load_checkpoint``."""
from __future__ import annotations

import json
import sys

import pytest
import torch

from canter.checkpoint import read_metadata, save_checkpoint
from canter.data.dataset import collect
from canter.errors import CanterError
from support import assert_one_line_error, run_cli


def _plant_in_header(st_path, edit):
    """Rewrite the header's copy of the metadata of the .safetensors ``st_path`` with ``edit`` (its hash kept)."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(st_path), framework="pt") as f:
        header, tensors = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}
    meta = json.loads(header["canter_meta"])
    edit(meta)
    save_file(tensors, str(st_path), metadata={**header, "canter_meta": json.dumps(meta, indent=1)})


def test_read_metadata_of_a_lone_safetensors_checks_its_header_copy(tmp_path):
    """An edited header copy was returned by read_metadata as if canter had written it (load_checkpoint refused it)."""
    base = save_checkpoint(tmp_path / "ck", {"w": torch.ones(2)}, {"step": 1})
    (tmp_path / "ck.json").unlink()
    assert read_metadata(base)["step"] == 1  # unchanged: read from the header alone
    _plant_in_header(tmp_path / "ck.safetensors", lambda m: m.update(step=2))
    with pytest.raises(CanterError, match="is corrupt: its tensors or metadata differ from the hash in its header"):
        read_metadata(base)


def test_a_lone_dataset_naming_a_module_is_refused_before_importing_it(tmp_path, capsys, monkeypatch):
    """user_modules planted in a lone dataset's header were imported (their code ran) by an offline run's config
    resolution, which reads the dataset's metadata alone, before its tensors were loaded and checked."""
    (tmp_path / "planted_lone_mod.py").write_text("import pathlib\npathlib.Path(__file__).with_name('RAN').touch()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "data"
    collect("CartPole-v1", 30, None, seed=0).save(path)
    (tmp_path / "data.json").unlink()
    _plant_in_header(tmp_path / "data.safetensors", lambda m: m.update(user_modules=["planted_lone_mod"]))
    code, _, err = run_cli(capsys, "train", "bc", "--dataset", str(path), "--max-steps", "10", "--run-dir",
                           str(tmp_path / "run"), "--quiet")
    assert_one_line_error(code, err, "is corrupt: its tensors or metadata differ from the hash in its header")
    assert not (tmp_path / "RAN").exists() and "planted_lone_mod" not in sys.modules


def test_write_checkpoint_json_keeps_the_header_hash_fitting(tmp_path):
    """tests/checkpoint_support.write_checkpoint_json wrote a new header copy but kept the old content_sha256: the
    checkpoint it wrote, read without its .json, was refused as corrupt, not read as one a canter save wrote."""
    from checkpoint_support import write_checkpoint_json

    from canter.checkpoint import load_checkpoint

    base = save_checkpoint(tmp_path / "ck", {"w": torch.ones(2)}, {"step": 1})
    meta = json.loads((tmp_path / "ck.json").read_text())
    write_checkpoint_json(base, {**meta, "step": 5})
    (tmp_path / "ck.json").unlink()
    assert read_metadata(base)["step"] == 5 and load_checkpoint(base)[1]["step"] == 5
