"""The run-data readers and the tools on long runs: work bounded by the output, not by the rows of the tables
(tables made with pyarrow directly, in the schemas canter writes, by benchmarks/bench_rundata.py)."""
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
from bench_rundata import PPO_STATS, write_tables  # noqa: E402

from canter.tools.rundata import read_table  # noqa: E402

UPDATES = 200_000


@pytest.fixture(scope="module")
def big_tables(tmp_path_factory):
    """A directory with 20k episodes, 200k update rows and 300 evaluations (a multi-agent run's labels too)."""
    path = tmp_path_factory.mktemp("big")
    write_tables(path, 20_000, UPDATES, 300, steps=10_000_000, agents=("a", "b"))
    return path


def test_read_table_makes_no_python_object_per_row(big_tables):
    """read_table turned every value into a Python object (to_pylist) and back: 2.5 s and ~30 MB of Python
    objects for 200k rows of 11 columns; pyarrow converts the columns now."""
    read_table(big_tables / "updates.parquet")  # imports, arrow's pools
    tracemalloc.start()
    try:
        table = read_table(big_tables / "updates.parquet")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert list(table) == ["step", "wall_time", "steps_per_second", *PPO_STATS]
    assert all(v.dtype == np.float64 and len(v) == UPDATES for v in table.values())
    assert peak < UPDATES * 8 / 4  # a quarter of one float64 column: nothing per row
    history = read_table(big_tables / "history.parquet")
    assert "agent" not in history and history["episode_length"].dtype == np.float64  # names are no numbers


def test_read_table_keeps_nulls_as_nan_and_booleans_as_numbers(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"step": pa.array([1, None], pa.int64()), "flag": [True, None], "none": [None, None],
                             "name": ["x", "y"], "big": pa.array([2**60, 1], pa.int64())}), tmp_path / "t.parquet")
    table = read_table(tmp_path / "t.parquet")
    assert list(table) == ["step", "flag", "none", "big"]
    np.testing.assert_array_equal(table["step"], [1.0, np.nan])
    np.testing.assert_array_equal(table["flag"], [1.0, np.nan])
    assert np.isnan(table["none"]).all() and table["big"][0] == float(2**60)


def test_plot_and_benchmark_results_do_not_read_the_update_table(big_tables, tmp_path, monkeypatch):
    """canter plot and benchmark draw learning curves only, yet read every update row (1M in a long run)
    too; they check that table's footer now (a damaged one is still refused: tests/test_tools_errors.py)."""
    import shutil

    import canter.tools.rundata as rundata
    from canter.tools.benchmark import Cell, table_rows
    from canter.tools.plot import plot_runs

    run = tmp_path / "runs" / "ppo-CartPole-v1-seed0"
    shutil.copytree(big_tables, run)
    (run / "config.yaml").write_text("algo: ppo\nenv: CartPole-v1\nseed: 0\n")
    read = []
    real = rundata.read_table
    monkeypatch.setattr(rundata, "read_table", lambda path, *a: read.append(path.name) or real(path, *a))
    plot_runs([run], out=tmp_path / "curve.png")
    table_rows([Cell("ppo", "CartPole-v1", 0, {})], tmp_path / "runs")
    assert read and "updates.parquet" not in read


def _points(artist) -> int:
    """The points an artist of a figure draws (a line's vertices, a scatter's dots, a band's outline)."""
    if hasattr(artist, "get_xdata"):
        return len(artist.get_xdata())
    offsets = artist.get_offsets() if hasattr(artist, "get_offsets") else ()
    return max(len(offsets), sum(len(p.vertices) for p in artist.get_paths()))


def test_report_draws_a_bounded_number_of_points_of_a_long_run(big_tables, tmp_path, monkeypatch):
    """The report drew every training episode as a dot and every update row into each panel (1M rows: ~11 s,
    most of it matplotlib and the legend's placement); each curve is drawn through at most 4 points per
    1/DRAW_BINS of the steps now, the episodes as a min-max band, the evaluations as a line in a ± std band."""
    import shutil

    from canter.tools import report
    from canter.tools.plot import DRAW_BINS

    run = tmp_path / "run"
    shutil.copytree(big_tables, run)
    (run / "config.yaml").write_text("algo: ppo\nenv: CartPole-v1\nseed: 0\n")
    figures = []
    monkeypatch.setattr(report, "_img", lambda fig, alt: figures.append(fig) or "")
    monkeypatch.setattr(report, "MAX_MARKERS", 100)  # the fixture's 300 evaluations: the line and band
    report.write_report(run, eval_episodes=0)
    assert len(figures) == 3  # learning curve, update statistics, throughput
    artists = [a for fig in figures for ax in fig.axes for a in [*ax.lines, *ax.collections]]
    counts = [_points(a) for a in artists]
    assert max(counts) <= 4 * DRAW_BINS + 8 and min(counts) > 0, counts
    # episode band, rolling mean, evaluation band and line; a panel per statistic; throughput and its whole-run
    # rate (the run has no summary.json: from the saved tables)
    assert len(artists) == 4 + len(PPO_STATS) + 2


def test_envelope_rows_keep_every_row_of_a_short_curve_and_the_extremes_of_a_long_one():
    from canter.tools.plot import envelope_band, envelope_rows

    x = np.arange(400.0)
    np.testing.assert_array_equal(envelope_rows(x, np.sin(x), bins=100), np.arange(400))  # small runs: unchanged
    rng = np.random.default_rng(1)
    x, y = np.sort(rng.uniform(0, 1e6, 50_000)), rng.normal(size=50_000)
    y[::5] = np.nan
    rows = envelope_rows(x, y, bins=100)
    assert len(rows) <= 400 and rows[0] == 0 and rows[-1] == len(x) - 1 and np.all(np.diff(rows) > 0)
    assert np.nanmax(y[rows]) == np.nanmax(y) and np.nanmin(y[rows]) == np.nanmin(y)
    bins = np.minimum((x / 1e4).astype(int), 99)  # 100 equal stretches of x (x[0] ~ 0, x[-1] ~ 1e6)
    assert all(np.nanmax(y[rows][bins[rows] == b]) == np.nanmax(y[bins == b]) for b in (0, 37, 99))
    mid, lo, hi = envelope_band(x, y, bins=100)
    assert len(mid) == 100 and np.all(lo <= hi) and lo.min() == np.nanmin(y) and hi.max() == np.nanmax(y)
    shuffled = rng.permutation(x)  # x that goes back (wall time across a resume): stretches of rows
    assert len(envelope_rows(shuffled, y, bins=100)) <= 400
