"""canter.atomic: files written atomically get ordinary permissions, and errors name the file the caller asked
for (or the file in the way), never the temporary one."""
import os
from pathlib import Path

import pytest
import torch

from canter.checkpoint import save_checkpoint


def test_atomic_writes_get_ordinary_file_permissions(tmp_path):
    """Files written atomically honour the umask like open() does (mkstemp alone makes them 0600, so a run
    directory's config, checkpoints and summary were unreadable to the group while its TensorBoard files were not)."""
    from canter.atomic import atomic_write

    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "a.txt", b"x")
        save_checkpoint(tmp_path / "ck", {"w": torch.ones(1)}, {"step": 1})
        with open(tmp_path / "plain.txt", "wb") as f:
            f.write(b"x")
    finally:
        os.umask(old)
    expected = (tmp_path / "plain.txt").stat().st_mode & 0o777
    assert expected == 0o644
    for name in ("a.txt", "ck.json", "ck.safetensors"):
        assert (tmp_path / name).stat().st_mode & 0o777 == expected, name


def test_atomic_write_error_names_the_target_not_the_temp_file(tmp_path, monkeypatch):
    import errno
    import tempfile

    from canter.atomic import atomic_write

    def refused(prefix: str, suffix: str, dir: Path):
        path = Path(dir) / f"{prefix}abc{suffix}"
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    monkeypatch.setattr(tempfile, "mkstemp", refused)
    with pytest.raises(OSError) as info:
        atomic_write(tmp_path / "out.png", b"x")
    assert info.value.filename == str(tmp_path / "out.png")


def test_atomic_write_under_a_file_names_the_file_in_the_way(tmp_path, capsys):
    """`canter report RUN --out notes.txt/r.html` (plot --out, any file canter writes) where notes.txt is a file said 'File exists:
    notes.txt/r.html', which names the file to write, that does not exist; it now says which part is not a
    directory."""
    from canter.atomic import atomic_write
    from canter.cli import main

    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError) as info:
        atomic_write(tmp_path / "file" / "out.png", b"x")
    assert info.value.filename == str(tmp_path / "file")
    assert (tmp_path / "file").read_text() == "x"
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.yaml").write_text("algo: ppo\nenv: CartPole-v1\n")
    assert main(["report", str(tmp_path / "run"), "--eval-episodes", "0", "--out", str(tmp_path / "file" / "r.html")]) == 2
    assert capsys.readouterr().err == f"canter: error: Not a directory: '{tmp_path / 'file'}'\n"
