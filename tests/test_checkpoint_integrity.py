"""A checkpoint's ``.json`` is checked against the copy of it in its ``.safetensors`` header (which the ``.json``'s
sha256 covers): a ``.json`` edited by hand or damaged is refused in one line before anything it names is imported."""
from __future__ import annotations

import json
import sys

import pytest
import torch

import canter
from canter.checkpoint import load_checkpoint, read_metadata, save_checkpoint
from canter.errors import CanterError
from support import assert_one_line_error, run_cli, untrained_agent

pytestmark = pytest.mark.filterwarnings("ignore:.*(less than one (rollout|training phase)|never learns).*")


def _edit(path, edit):
    meta = json.loads(path.read_text())
    edit(meta)
    path.write_text(json.dumps(meta, indent=1))


@pytest.mark.parametrize("read", [load_checkpoint, read_metadata])
def test_an_edited_json_is_refused_naming_the_field(tmp_path, read):
    """A changed step in the .json loaded as if canter had saved it: only the tensors were hashed."""
    base = save_checkpoint(tmp_path / "ck", {"w": torch.ones(3)}, {"step": 1, "config": {"lr": 0.1}})
    _edit(tmp_path / "ck.json", lambda m: m["config"].update(lr=0.5))
    with pytest.raises(CanterError) as info:
        read(base)
    message = str(info.value)
    assert f"{tmp_path / 'ck.json'} differs from the copy of it in its .safetensors file at 'config.lr'" in message


def test_an_unchanged_json_reformatted_still_loads(tmp_path):
    """Only the content is compared: key order and indentation (a JSON pretty-printer's) are not damage."""
    base = save_checkpoint(tmp_path / "ck", {"w": torch.ones(3)}, {"step": 1, "x": float("nan")})
    meta = json.loads((tmp_path / "ck.json").read_text())
    (tmp_path / "ck.json").write_text(json.dumps(dict(reversed(list(meta.items()))), indent="\t"))
    assert load_checkpoint(base)[1]["step"] == 1


def test_a_json_naming_a_module_is_refused_before_importing_it(tmp_path, capsys, monkeypatch):
    """user_modules added to the .json by hand were imported by canter.load and canter eval (their code ran)."""
    (tmp_path / "planted_mod.py").write_text("import pathlib\npathlib.Path(__file__).with_name('RAN').touch()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    untrained_agent("ppo", "CartPole-v1", n_envs=1, n_steps=64).save(tmp_path / "ag")
    _edit(tmp_path / "ag.json", lambda m: m.update(user_modules=["planted_mod"]))
    with pytest.raises(CanterError, match="differs from the copy of it in its .safetensors file at 'user_modules'"):
        canter.load(tmp_path / "ag")
    code, _, err = run_cli(capsys, "eval", str(tmp_path / "ag"), "--episodes", "1")
    assert_one_line_error(code, err, "'user_modules' (edited by hand or damaged)")
    assert not (tmp_path / "RAN").exists() and "planted_mod" not in sys.modules


@pytest.mark.parametrize("argv", [
    ["train", "--resume", "{run}", "--max-steps", "512", "--quiet"],
    ["train", "ppo", "--env", "CartPole-v1", "--set", "init_from={run}/checkpoints/last", "--quiet", "--run-dir", "{new}"],
    ["eval", "{run}/checkpoints/last", "--episodes", "1"],
    ["play", "{run}/checkpoints/last", "--episodes", "1"],
], ids=["resume", "init-from", "eval", "play"])
def test_every_command_refuses_an_edited_last_json_and_touches_nothing(finished_ppo_run, tmp_path, capsys, argv):
    """--resume, --set init_from=, eval and play all read a checkpoint through load_checkpoint/read_metadata: each
    refuses a last.json edited by hand (a bigger learning rate) in one line, exit 2, the run directory unchanged."""
    import shutil

    from support import snapshot

    run = tmp_path / "run"
    shutil.copytree(finished_ppo_run, run)
    _edit(run / "checkpoints" / "last.json", lambda m: m["config"]["hparams"].update(lr=0.5))
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, *[a.format(run=run, new=tmp_path / "new") for a in argv])
    assert_one_line_error(code, err, "last.json differs from the copy of it in its .safetensors file at "
                                     "'config.hparams.lr'")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("json_file", ["missing", "a save behind"])
def test_a_lone_safetensors_with_changed_tensors_is_refused(tmp_path, json_file):
    """A .safetensors read without its .json (deleted, or the kill between the two renames of a save) was not hashed:
    a flipped bit in its tensors loaded. Its header's content_sha256 covers its metadata and tensors."""
    base = save_checkpoint(tmp_path / "ck", {"w": torch.full((4,), 1.0)}, {"step": 1})
    behind = (tmp_path / "ck.json").read_bytes()
    save_checkpoint(base, {"w": torch.full((4,), 2.0)}, {"step": 2})
    if json_file == "missing":
        (tmp_path / "ck.json").unlink()
    else:
        (tmp_path / "ck.json").write_bytes(behind)
    assert load_checkpoint(base)[1]["step"] == 2  # unchanged: read from the header alone
    st = tmp_path / "ck.safetensors"
    blob = bytearray(st.read_bytes())
    blob[-1] ^= 0x01  # the last byte of the tensor's data: still a valid float
    st.write_bytes(bytes(blob))
    with pytest.raises(CanterError, match=f"{st} is corrupt: its tensors or metadata differ from the hash in its "
                                          f"header"):
        load_checkpoint(base)


def test_a_lone_safetensors_an_older_canter_wrote_loads_with_a_warning(tmp_path):
    """One without content_sha256 (written before it existed) still loads, saying its tensors are unchecked."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    from canter.errors import CanterWarning

    base = save_checkpoint(tmp_path / "ck", {"w": torch.ones(2)}, {"step": 1})
    st = tmp_path / "ck.safetensors"
    with safe_open(str(st), framework="pt") as f:
        header, tensors = f.metadata(), {k: f.get_tensor(k) for k in f.keys()}
    del header["content_sha256"]
    save_file(tensors, str(st), metadata=header)
    (tmp_path / "ck.json").unlink()
    with pytest.warns(CanterWarning, match="an older canter wrote it with no hash of its own: its tensors are unchecked"):
        assert load_checkpoint(base)[0]["w"].tolist() == [1.0, 1.0]


def test_a_checkpoint_saved_again_with_its_loaded_metadata_loads(tmp_path):
    """save_checkpoint(base, *load_checkpoint(base)) kept the loaded checkpoint_id in the .json, which the header's new
    one then replaced: read from the header, it was taken for a checkpoint changed while read (the header's id was
    compared with its metadata's), as init_from of such a checkpoint showed (test_image_normalize_obs). (The save now
    writes its own id: test_loaded_metadata_saved_under_a_new_name_is_one_checkpoint.)"""
    base = save_checkpoint(tmp_path / "ck", {"w": torch.ones(2)}, {"step": 1})
    state, meta = load_checkpoint(base)
    save_checkpoint(base, state, meta)
    assert load_checkpoint(base)[0]["w"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("lone", [False, True], ids=["with-json", "lone"])
def test_a_tensor_of_a_dtype_numpy_lacks_is_saved_and_loaded(tmp_path, lone):
    """content_sha256 took each tensor's bytes through .numpy(): a float8 tensor (numpy has no float8), which a
    save wrote before the hash, raised a TypeError and the save was lost. Its bytes are hashed whatever the dtype."""
    state = {"f8": torch.ones(3, dtype=torch.float8_e4m3fn), "bf16": torch.full((2,), 1.5, dtype=torch.bfloat16)}
    base = save_checkpoint(tmp_path / "ck", state, {"step": 1})
    if lone:
        (tmp_path / "ck.json").unlink()
    loaded = load_checkpoint(base)[0]
    assert loaded["f8"].dtype == torch.float8_e4m3fn and loaded["f8"].float().tolist() == [1.0, 1.0, 1.0]
    assert loaded["bf16"].float().tolist() == [1.5, 1.5]


def test_loaded_metadata_saved_under_a_new_name_is_one_checkpoint(tmp_path):
    """The loaded metadata's checkpoint_id and sha256 overrode the save's own: saved under a new name, its .json held
    the old id and its header the new one, and it was refused ('do not belong together'); saved again in place, it
    was read from its header alone, its .json never checked. The save now writes its own id and hash."""
    from safetensors import safe_open

    base = save_checkpoint(tmp_path / "ck", {"w": torch.ones(2)}, {"step": 1})
    state, meta = load_checkpoint(base)
    for name in ("copy", "ck"):
        save_checkpoint(tmp_path / name, state, meta)
        assert load_checkpoint(tmp_path / name)[0]["w"].tolist() == [1.0, 1.0]
        with safe_open(str(tmp_path / f"{name}.safetensors"), framework="pt") as f:
            header_id = f.metadata()["checkpoint_id"]
        assert json.loads((tmp_path / f"{name}.json").read_text())["checkpoint_id"] == header_id != meta["checkpoint_id"]
