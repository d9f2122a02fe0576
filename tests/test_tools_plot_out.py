"""canter plot's --size and --out given values argparse or the format check misread, and what --out may replace."""
from __future__ import annotations

import pytest

from canter.cli import main


@pytest.mark.parametrize("args", [["--size", "-5x100"], ["--size=-5x100"], ["--size", "-800x500", "--out", "c.svg"]])
def test_a_negative_size_reaches_the_size_check(args, tmp_path, capsys, monkeypatch):
    """``--size -5x100`` got argparse's "argument --size: expected one argument" (a value starting with '-'
    looked like an option); only ``--size=-5x100`` reached canter's size check."""
    monkeypatch.chdir(tmp_path)
    assert main(["plot", "no-run", *args]) == 2
    err = capsys.readouterr().err
    assert "--size must be WIDTHxHEIGHT" in err and "-" in err.split("got")[1] and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_a_size_flag_followed_by_another_flag_is_still_a_missing_value(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["plot", "no-run", "--size", "--out", "x.png"]) == 2
    assert "argument --size: expected one argument" in capsys.readouterr().err


@pytest.mark.parametrize("out, message", [
    (".png", "--out '.png' has no file name before '.png'; give one, e.g. curves.png"),
    ("figs/.SVG", "has no file name before '.SVG'; give one, e.g. figs/curves.SVG"),
    ("curves", "--out 'curves' has no image suffix; end it in .png, .svg or .pdf, e.g. curves.png"),
    (".", "--out '.' is a directory; give an image file name"),
])
def test_an_out_without_a_format_suffix_is_named_clearly(out, message, tmp_path, capsys, monkeypatch):
    """``--out .png`` (a hidden file's name, no suffix) said "unknown image format '(none)'", and so did a
    directory or a name without a suffix."""
    monkeypatch.chdir(tmp_path)
    assert main(["plot", "no-run", "--out", out]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())
