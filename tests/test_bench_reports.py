"""The benchmark reports' tables: which runs are paired and how the canter/SB3 ratios and their spread are made."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
import bench_offpolicy  # noqa: E402


def speed(lib: str, seed: int, steps: int, sps: float, algo: str = "sac") -> dict:
    return {"kind": "speed", "lib": lib, "algo": algo, "seed": seed, "steps": steps, "sps": sps}


def table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| SAC |")]


def test_offpolicy_speed_pairs_runs_of_one_invocation_and_one_budget():
    """The report paired each seed's latest canter row with its latest SB3 row, wherever they came from: a later
    short run (--steps 200) took over seed 1's cell in the 3,000-step row, and a canter run whose SB3 run then
    failed was paired with the SB3 run of an earlier invocation."""
    rows = [speed("canter", 1, 3000, 100.0), speed("sb3", 1, 3000, 80.0),
            speed("canter", 2, 3000, 90.0), speed("sb3", 2, 3000, 60.0),
            speed("canter", 1, 200, 30.0), speed("sb3", 1, 200, 60.0),  # a short run: its own row
            speed("canter", 2, 3000, 999.0)]  # its SB3 run failed: no pair, seed 2's earlier pair stays
    text = bench_offpolicy.build_section(rows)
    assert table_rows(text) == [
        "| SAC | 256-256 | highest (plain float32, the default) | 200 | 1 | 30.0 | 60.0 | 30.0 | 60.0 | 0.50 |",
        "| SAC | 256-256 | highest (plain float32, the default) | 3,000 | 1, 2 | 100.0, 90.0 | 80.0, 60.0 | 95.0 | 70.0 "
        "| 1.38 (1.25 to 1.50) |"]
    assert "SAC misses it (median 1.38x at 3,000 steps)" in text
