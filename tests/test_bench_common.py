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


def test_cartpole_report_compares_canter_dqn_at_2_threads_with_sb3s_faster_setting_per_seed():
    """Seed 1: SB3 is faster at 1 thread; seed 2: at 2 threads. The 2-thread row takes each seed's faster."""
    import argparse

    import bench_cartpole

    def sps(*values: float) -> list[dict]:
        return [{"sps": v} for v in values]

    t2t = [{"total_s": 2.0, "import_s": 1.0, "train_call_s": 1.0, "steps": 10, "solved": True}] * 2
    e2e = [{"command": "canter train", "e2e_s": 3.0, "steps": 10, "solved": True}] * 2
    R = {"ppo_cfg": {"max_steps": 100}, "dqn_cfg": {"max_steps": 100},
         ("canter", "ppo-sps"): sps(40, 40), ("sb3", "ppo-sps"): sps(10, 10),
         ("canter", "dqn-sps"): sps(30, 30), ("canter", "dqn-sps-t2"): sps(36, 36),
         ("sb3", "dqn-sps"): sps(12, 9), ("sb3", "dqn-sps-t2"): sps(9, 12)}
    for lib in ("canter", "sb3"):
        R[(lib, "ppo-t2t")] = R[(lib, "dqn-t2t")] = t2t
        R[(lib, "ppo-e2e")] = e2e
    meta = {"date": "d", "cpu": "c", "load_before": "l", "load_after": "l", "versions": {}, "elapsed": 1.0,
            "command": "python benchmarks/bench_cartpole.py"}
    text = bench_cartpole.build_report(R, [1, 2], argparse.Namespace(quick=False), meta)
    row = next(line for line in text.splitlines() if line.startswith("| DQN, canter at 2 threads"))
    assert row.endswith("| 36 (36–36) | 12 (12–12) | 3.00 (3.00–3.00) |")  # 36/12 on both seeds; SB3's 1-thread runs alone give 3.00 / 4.00
    ref = next(line for line in text.splitlines() if line.startswith("| DQN, SB3 at 2 threads"))
    assert ref.endswith("| 10 (9–12) | 1.04 (0.75–1.33) |")
    one = next(line for line in text.splitlines() if line.startswith("| DQN | 100 steps"))
    assert one.endswith("| 30 (30–30) | 10 (9–12) | 2.92 (2.50–3.33) |")


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
    assert len(sps) == 6  # PPO: canter, SB3; DQN: each library at 1 and at 2 threads
    dqn = [r for r in sps if r["task"] == "dqn-sps"]  # canter's 2-thread run keeps torch at one (OpenBLAS gets 2)
    assert sorted(r["lib"] for r in dqn) == ["canter", "canter", "sb3", "sb3"]
    assert sorted(r["threads"] for r in dqn if r["lib"] == "sb3") == [1, 2]
    two = {line.split(" | ")[0] for line in text.splitlines() if line.startswith("| DQN, ") and "2,048 steps" in line}
    assert two == {"| DQN, canter at 2 threads (SB3: the faster of its 1- and 2-thread runs of each seed)",
                   "| DQN, SB3 at 2 threads (reference; last column: SB3 at 2 threads / SB3 at 1)"}
    best = [line for line in text.splitlines() if line.startswith("| DQN, canter at 2 threads")][0].split(" | ")[3]
    sb3 = {r["threads"]: r["sps"] for r in sps if r["lib"] == "sb3"}
    assert best.replace(",", "") == f"{max(sb3.values()):.0f}"  # the row compares with SB3's faster setting
    for r in sps:
        # the raw JSON rounds each to 4 decimals: three roundings of up to 5e-5 each
        assert r["turns"] >= 1 and 0 < r["train_only_s"] <= r["loop_s"] - (r["eval_s"] or 0.0) + 1.5e-4
        assert r["sps"] == pytest.approx(r.get("transitions", r["steps"]) / r["train_only_s"], rel=1e-3)  # raw JSON rounds


def test_check_appendable_takes_an_existing_or_new_file_in_a_folder_and_refuses_the_rest(tmp_path, capsys):
    """The check before a run that appends to --jsonl: a file there or to be made there passes, a missing folder or
    a directory is a one-line error."""
    (tmp_path / "old.jsonl").write_text("{}\n")
    _common.check_appendable(tmp_path / "old.jsonl")
    _common.check_appendable(tmp_path / "new.jsonl")
    for bad in (tmp_path / "no" / "r.jsonl", tmp_path):
        with pytest.raises(SystemExit) as exc:
            _common.check_appendable(bad)
        assert exc.value.code == 2 and str(bad) in capsys.readouterr().err
