"""``--out ''`` of ``canter report`` and ``canter plot``: refused as tune, benchmark and collect refuse it.

``canter report RUN --out ''`` answered "--out '.' is a directory; give a file name, e.g. report.html" (a path the
user never typed, read from ``Path('')``), and ``canter plot RUN --out ''`` "unknown image format '(none)'"; both
now say that --out was given empty, before the run directory is read.
"""
from __future__ import annotations

import pytest
from support import assert_one_line_error, run_cli


@pytest.mark.parametrize("command", ["report", "plot"])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_out_is_named_as_empty(capsys, tmp_path, command, value):
    code, out, err = run_cli(capsys, command, str(tmp_path / "no-such-run"), "--out", value)
    assert_one_line_error(code, err, "--out needs a value, got ''; leave it out for the default")
    assert out == ""
    assert list(tmp_path.iterdir()) == []
