"""canter report's checkpoint table lists the checkpoints that load: it listed only names with a .json, so a step-N
left with only its .safetensors by a killed prune (which canter.load and canter eval load from its header) was
missing, while a .json whose tensors were gone (which does not load) was listed at 0 bytes."""
from __future__ import annotations

import numpy as np
import torch

from canter.checkpoint import load_checkpoint, save_checkpoint
from canter.tools.rundata import checkpoints


def _save(folder, name: str, step: int) -> None:
    save_checkpoint(folder / name, {"w": torch.zeros(4)}, {"step": step, "trainer": {"best_eval_return": 1.5}})


def test_a_safetensors_alone_is_listed_and_a_json_alone_is_not(tmp_path):
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    for name, step in (("step-000000100", 100), ("step-000000200", 200), ("last", 300)):
        _save(folder, name, step)
    (folder / "step-000000100.json").unlink()  # a prune killed between its two deletions
    (folder / "step-000000200.safetensors").unlink()
    state, meta = load_checkpoint(folder / "step-000000100")  # loads, from its header
    assert np.array_equal(state["w"].numpy(), np.zeros(4)) and meta["step"] == 100
    rows = {row["name"]: row for row in checkpoints(tmp_path)}
    assert sorted(rows) == ["last", "step-000000100"]
    assert rows["step-000000100"]["step"] == 100 and rows["step-000000100"]["bytes"] > 0
    assert rows["step-000000100"]["best_eval_return"] == 1.5
