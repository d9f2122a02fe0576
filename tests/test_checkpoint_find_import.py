"""canter/checkpoint_find.py, split from canter/checkpoint.py (8aa7fa2), imported before canter.checkpoint: the two
import each other, and importing checkpoint_find first was an ImportError ("cannot import name 'DATASET_NOT_RUN' from
partially initialized module 'canter.checkpoint_find'")."""
from __future__ import annotations

import importlib
import sys


def test_checkpoint_find_imports_first(monkeypatch, tmp_path):
    import canter.checkpoint  # noqa: F401 - the modules given back after the test
    import canter.checkpoint_find  # noqa: F401

    for name in ("canter.checkpoint", "canter.checkpoint_find"):  # as in a fresh process
        monkeypatch.delitem(sys.modules, name)
        monkeypatch.setattr(canter, name.split(".")[1], getattr(canter, name.split(".")[1]))
    found = importlib.import_module("canter.checkpoint_find")
    assert importlib.import_module("canter.checkpoint").find_checkpoint is found.find_checkpoint  # re-exported
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "best.json").write_text("{}")
    assert found.find_checkpoint(tmp_path) == tmp_path / "checkpoints" / "best"
