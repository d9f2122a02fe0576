"""A checkpoint of a newer format than this canter reads (``format_version`` above ``FORMAT_VERSION``) is refused in
one line, before its state is read with this canter's layout."""
import json

import pytest
import torch

import canter
import canter.checkpoint
from canter.checkpoint import FORMAT_VERSION, load_checkpoint, save_checkpoint
from canter.errors import CanterError
from support import assert_one_line_error, run_cli, untrained_agent

pytestmark = pytest.mark.filterwarnings("ignore:.*(less than one (rollout|training phase)|never learns).*")


def _save_as_version(path, state, meta, version):
    """``save_checkpoint`` as a canter whose FORMAT_VERSION is ``version`` would write it (the metadata's own
    ``format_version`` is left out of a save)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(canter.checkpoint, "FORMAT_VERSION", version)
        return save_checkpoint(path, state, meta)


def test_a_newer_format_version_is_refused_in_one_line(tmp_path, capsys):
    """``format_version: 2`` was never read: such a checkpoint loaded as a version 1 one (and a layout that changed
    would have failed later, obscurely, or loaded wrong); it names the version and says a newer canter wrote it."""
    untrained_agent("ppo", "CartPole-v1", n_envs=1, n_steps=64).save(tmp_path / "ck")
    state, meta = load_checkpoint(tmp_path / "ck")
    kept = {k: v for k, v in meta.items() if k not in ("sha256", "checkpoint_id", "state")}
    save_checkpoint(tmp_path / "same", state, kept)
    assert canter.load(tmp_path / "same").predict([0.0, 0.0, 0.0, 0.0]) in (0, 1)  # this version: loaded
    _save_as_version(tmp_path / "newer", state, kept, FORMAT_VERSION + 1)
    with pytest.raises(CanterError, match=f"has format_version {FORMAT_VERSION + 1}; this canter reads format_version "
                                          f"{FORMAT_VERSION} and before: it was written by a newer canter"):
        canter.load(tmp_path / "newer")
    code, _, err = run_cli(capsys, "eval", str(tmp_path / "newer"))
    assert_one_line_error(code, err, "written by a newer canter")


@pytest.mark.parametrize("version", ["1", True, 1.5])
def test_an_odd_format_version_is_not_said_to_be_a_newer_canters(tmp_path, version):
    """A format_version no canter writes ('1', true, 1.5) was answered 'written by a newer canter (pip install -U
    canter)', which upgrading would not help (as the opponents index's version, 9442173f)."""
    _save_as_version(tmp_path / "odd", {"w": torch.ones(2)}, {}, version)
    with pytest.raises(CanterError) as info:
        load_checkpoint(tmp_path / "odd")
    message = str(info.value)
    assert f"has format_version {version!r}, not a whole number" in message and "newer canter" not in message, message


@pytest.mark.parametrize("version", [0, -1])
def test_a_format_version_of_zero_or_below_is_refused(tmp_path, capsys, version):
    """format_version 0 or -1 (no canter writes one) was read as this canter's: only one above FORMAT_VERSION was
    refused; canter eval of it is one line, exit 2."""
    _save_as_version(tmp_path / "low", {"w": torch.ones(2)}, {}, version)
    with pytest.raises(CanterError) as info:
        load_checkpoint(tmp_path / "low")
    message = str(info.value)
    assert f"has format_version {version}; format versions start at 1" in message, message
    assert "newer canter" not in message, message
    untrained_agent("ppo", "CartPole-v1", n_envs=1, n_steps=64).save(tmp_path / "ck")
    state, meta = load_checkpoint(tmp_path / "ck")
    kept = {k: v for k, v in meta.items() if k not in ("sha256", "checkpoint_id", "state")}
    _save_as_version(tmp_path / "zero", state, kept, version)
    code, _, err = run_cli(capsys, "eval", str(tmp_path / "zero"))
    assert_one_line_error(code, err, "format versions start at 1")


@pytest.mark.parametrize("version", [0, FORMAT_VERSION + 1])
def test_a_save_writes_its_own_format_version(tmp_path, version):
    """A loaded checkpoint's metadata saved again kept its ``format_version`` (the metadata overrode the save's own,
    as checkpoint_id and sha256 did before 7c689430): a state written in this canter's layout was labelled another."""
    _save_as_version(tmp_path / "other", {"w": torch.ones(2)}, {"step": 1}, version)
    meta = json.loads((tmp_path / "other.json").read_text())
    assert meta["format_version"] == version
    save_checkpoint(tmp_path / "again", {"w": torch.ones(2)}, meta)
    state, loaded = load_checkpoint(tmp_path / "again")
    assert loaded["format_version"] == FORMAT_VERSION and loaded["step"] == 1 and state["w"].tolist() == [1.0, 1.0]
