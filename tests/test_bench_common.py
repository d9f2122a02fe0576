"""The benchmark scripts' shared helpers (benchmarks/_common.py): a missing SB3 and the results file."""
import importlib.util
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
import _common  # noqa: E402


def test_missing_sb3_is_a_one_line_error_with_exit_code_2(monkeypatch, capsys):
    real = importlib.util.find_spec
    hide_sb3 = lambda name, *a: None if name == "stable_baselines3" else real(name, *a)  # noqa: E731
    monkeypatch.setattr(importlib.util, "find_spec", hide_sb3)
    with pytest.raises(SystemExit) as exc:
        _common.require_sb3()
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and '".[bench]"' in err


def test_write_section_replaces_only_its_own_block(tmp_path):
    out = tmp_path / "RESULTS.md"
    out.write_text("# head\n\n<!-- a -->\nold\n<!-- /a -->\n\ntail\n")
    _common.write_section(out, "new", "<!-- a -->", "<!-- /a -->")
    assert out.read_text() == "# head\n\n<!-- a -->\nnew\n<!-- /a -->\n\ntail\n"
    _common.write_section(out, "b1", "<!-- b -->", "<!-- /b -->")  # absent: appended, the rest kept
    assert out.read_text().endswith("tail\n\n<!-- b -->\nb1\n<!-- /b -->\n") and "new" in out.read_text()
