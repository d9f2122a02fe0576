"""Reading a checkpoint while its run saves it again or prunes it (``canter eval`` of a run that is training)."""
import pytest
import torch

import canter.checkpoint as ckpt
from canter.checkpoint import load_checkpoint, read_metadata, save_checkpoint
from canter.errors import CanterError


@pytest.mark.parametrize("after, saves, read", [
    ("_read_header", 1, load_checkpoint),  # was: 'corrupt: its sha256 differs'
    ("_read_json_file", 2, load_checkpoint),  # was: 'do not belong together'
    ("_read_json_file", 2, read_metadata),
])
def test_a_checkpoint_saved_again_while_it_is_read_is_read_whole(tmp_path, monkeypatch, after, saves, read):
    """load_checkpoint read the .json, then opened the .safetensors twice (its header, then its bytes): a save
    between the two opens made a good checkpoint 'corrupt: its sha256 differs' (measured: 38 of 10,518 loads
    of a run saving every iteration failed, one as 'not a readable safetensors file'), two saves after the
    .json was read made it 'do not belong together'. A read that met a save now reads the checkpoint again."""
    base = tmp_path / "last"
    save_checkpoint(base, {"w": torch.zeros(3)}, {"step": 0})
    real, done = getattr(ckpt, after), []

    def read_then_save(path, *rest):
        result = real(path, *rest)
        if not done:  # the run saves just after the reader took this part
            done.append(path)
            for step in range(1, saves + 1):
                save_checkpoint(base, {"w": torch.full((3,), float(step))}, {"step": step})
        return result

    monkeypatch.setattr(ckpt, after, read_then_save)
    got = read(base)
    meta = got[1] if isinstance(got, tuple) else got
    assert meta["step"] == saves
    if isinstance(got, tuple):
        assert got[0]["w"].tolist() == [float(saves)] * 3


def test_a_checkpoint_pruned_while_it_is_read_is_a_one_line_error_naming_the_newer_ones(tmp_path, monkeypatch):
    """canter.load / canter eval of RUN/checkpoints/step-N while the run trains with keep_checkpoints: the run deleted
    step-N just after its header was read, and reading its tensors raised a bare FileNotFoundError (a traceback).
    Now a CanterError says it was deleted and names the run's checkpoints nearest it, without reading it again."""
    folder = tmp_path / "run" / "checkpoints"
    for step in (1000, 2000):
        save_checkpoint(folder / f"step-{step:09d}", {"w": torch.zeros(3)}, {"step": step})
    pruned, real, reads = folder / "step-000001000", ckpt._read_header, []

    def read_then_prune(path, *rest):
        reads.append(path)
        result = real(path, *rest)
        for suffix in (".json", ".safetensors"):
            pruned.with_name(pruned.name + suffix).unlink(missing_ok=True)
        return result

    monkeypatch.setattr(ckpt, "_read_header", read_then_prune)
    with pytest.raises(CanterError, match=r"step-000001000 was deleted while it was read .*keep_checkpoints.*"
                                               r"did you mean '.*run/checkpoints/step-000002000'\?$"):
        load_checkpoint(pruned)
    assert len(reads) == 1
