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


@pytest.mark.slow
def test_bench_cartpole_quick_run_writes_its_report(tmp_path):
    """The whole CartPole benchmark at its tiny ``--quick`` budgets (~1 min): both throughput rows are
    filled, and each throughput process was credited at most its loop's wall time (only its turns)."""
    import json
    import subprocess

    out = tmp_path / "RESULTS.md"
    proc = subprocess.run([sys.executable, str(Path(_common.__file__).parent / "bench_cartpole.py"), "--quick",
                           "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = out.read_text()
    rows = [line for line in text.splitlines() if line.startswith(("| PPO | 2,048 steps |", "| DQN | 2,048 steps |"))]
    assert len(rows) == 2 and not any("n/a" in line for line in rows)  # throughput is measured even when quick
    raw = [json.loads(line) for line in text.split("```json\n", 1)[1].split("\n```", 1)[0].splitlines()]
    sps = [r for r in raw if r["task"].endswith("-sps")]
    assert len(sps) == 5  # PPO: canter, SB3; DQN: canter at 1 and 2 threads, SB3
    for r in sps:
        assert r["turns"] >= 1 and 0 < r["train_only_s"] <= r["loop_s"] - (r["eval_s"] or 0.0) + 1e-6
        assert r["sps"] == pytest.approx(r.get("transitions", r["steps"]) / r["train_only_s"], rel=1e-3)  # raw JSON rounds
