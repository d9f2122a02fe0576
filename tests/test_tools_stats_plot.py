"""canter plot and the statistics behind it (IQM, bootstrap intervals, mean bands), on a tiny budget."""
import numpy as np
import pytest

from canter.cli import main
from canter.errors import CanterError
from canter.tools import stats
from canter.tools.plot import group_runs, mean_band, parse_size
from canter.tools.rundata import load_run


TINY_PPO = ["--max-steps", "512", "--n-envs", "2", "--set", "n_steps=64", "--set", "n_epochs=2",
            "--eval-episodes", "2", "--quiet"]


@pytest.fixture(scope="module")
def two_seeds(tmp_path_factory):
    """Two PPO CartPole runs that differ only in the seed."""
    root = tmp_path_factory.mktemp("runs")
    dirs = []
    for seed in (0, 1):
        d = root / f"ppo-s{seed}"
        assert main(["train", "ppo", "--env", "CartPole-v1", "--seed", str(seed), "--run-dir", str(d), *TINY_PPO]) == 0
        dirs.append(d)
    return dirs


# -- statistics ------------------------------------------------------------------------------
def test_iqm_matches_scipy_trim_mean():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(3)
    for n in (1, 2, 3, 4, 5, 8, 11):
        x = rng.normal(size=n) * 10
        assert stats.iqm(x) == pytest.approx(scipy_stats.trim_mean(x, 0.25))
    assert stats.iqm([1, 2, 3, 4, 100, 5, 6, 7]) == pytest.approx(4.5)  # the outlier and the 1, 2, 7 are cut


def test_bootstrap_ci_is_a_percentile_interval_over_seeds():
    assert stats.bootstrap_ci([5.0, 5.0, 5.0]) == (5.0, 5.0)
    x = np.array([10.0, 20.0, 30.0, 40.0, 50.0, 60.0])
    lo, hi = stats.bootstrap_ci(x, reps=4000, seed=1)
    assert x.min() <= lo < stats.iqm(x) < hi <= x.max()
    # stratified: tasks are resampled separately, so a [runs, tasks] array with equal rows per task is exact
    assert stats.bootstrap_ci(np.array([[1.0, 9.0]] * 4)) == (5.0, 5.0)
    s = stats.summarize([1.0, 2.0, 3.0, 4.0])
    assert (s["median"], s["q25"], s["q75"], s["iqr"]) == (2.5, 1.75, 3.25, 1.5)
    assert s["iqm"] == 2.5 and s["iqm_low"] <= 2.5 <= s["iqm_high"]


# -- plot --------------------------------------------------------------------------------------
def test_mean_band_averages_where_runs_overlap():
    a = (np.array([0.0, 10.0]), np.array([0.0, 10.0]))
    b = (np.array([0.0, 20.0]), np.array([10.0, 30.0]))
    grid, mean, std = mean_band([a, b], points=3)  # grid 0, 10, 20
    np.testing.assert_allclose(grid, [0, 10, 20])
    np.testing.assert_allclose(mean, [5.0, 15.0, 30.0])  # at 20 only run b is there
    np.testing.assert_allclose(std, [5.0, 5.0, 0.0])
    _, mean, std = mean_band([a, b], points=3, hold=[True, False])  # run a stopped at its target: held at 10
    np.testing.assert_allclose(mean, [5.0, 15.0, 20.0])
    np.testing.assert_allclose(std, [5.0, 5.0, 10.0])


def test_a_curve_takes_the_rolling_return_after_all_episodes_that_ended_on_a_step(tmp_path):
    """Four envs whose episodes all end together (Pendulum: 200 steps each) give four history rows per step;
    the curve between two such steps went toward the first row of the next (a mean with one of its four new
    episodes): a PPO Pendulum run's curve read -1259 at step 1592 where the rolling return goes from
    -1172.6 after step 800 to -1307.4 after step 1604 (-1305)."""
    from canter.tools.plot import run_curve
    from canter.tools.rundata import RunData

    steps = np.array([800.0] * 4 + [1604.0] * 4)
    rolling = np.array([-960.5, -929.6, -1021.7, -1172.6, -1260.8, -1293.3, -1305.1, -1307.4])
    history = {"step": steps, "wall_time": steps / 100, "episode_return": rolling, "rolling_return": rolling}
    xs, ys = run_curve(RunData(tmp_path, {"algo": "ppo", "env": "Pendulum-v1"}, {}, history))
    np.testing.assert_array_equal(xs, [800.0, 1604.0])
    np.testing.assert_array_equal(ys, [-1172.6, -1307.4])
    grid, mean, _ = mean_band([(xs, ys)], points=3)
    np.testing.assert_allclose(mean, [-1172.6, -1240.0, -1307.4])


def test_plot_group_counts_only_runs_with_a_curve(tmp_path):
    """A seed killed before its first episode draws nothing: the legend said n=3 for a mean of 2 runs,
    and the y label 'training rolling mean, or evaluation mean' though no evaluation mean was drawn."""
    from canter.tools.plot import draw_groups, new_figure
    from canter.tools.rundata import RunData

    def run(name, steps):
        steps = np.asarray(steps, dtype=float)
        history = {"step": steps, "wall_time": steps / 100, "episode_return": steps, "rolling_return": steps}
        return RunData(tmp_path / name, {"algo": "ppo", "env": "CartPole-v1"}, {}, history if len(steps) else {})

    ax = new_figure(400, 300).add_subplot()
    draw_groups(ax, group_runs([run("s0", [10, 20]), run("s1", [10, 30]), run("killed", [])]))
    assert ax.get_legend_handles_labels()[1] == ["ppo CartPole-v1 (n=2)"]
    assert ax.get_ylabel() == "return (rolling mean of 100 training episodes)"
    # a seed stopped after one episode (at step 1234, between two points of the 200-point grid) adds
    # nothing to the mean either: the legend said n=3
    ax = new_figure(400, 300).add_subplot()
    draw_groups(ax, group_runs([run("s0", [10, 5000]), run("s1", [10, 6000]), run("one", [1234])]))
    assert ax.get_legend_handles_labels()[1] == ["ppo CartPole-v1 (n=2)"]


def test_plot_writes_image_of_requested_size(two_seeds, tmp_path, capsys):
    from PIL import Image

    runs = [load_run(d) for d in two_seeds]
    assert list(group_runs(runs)) == ["ppo CartPole-v1"]  # two seeds -> one group
    assert list(group_runs(runs, ["a", "b"])) == ["a", "b"]
    out = tmp_path / "curves.png"
    assert main(["plot", *map(str, two_seeds), "--out", str(out), "--size", "640x360", "--x", "time"]) == 0
    with Image.open(out) as img:
        assert img.size == (640, 360)
        colors = img.convert("RGB").getcolors(maxcolors=1 << 20)
    assert len(colors) > 20  # axes, text, a curve and its band: not a blank canvas
    svg = tmp_path / "curves.svg"
    assert main(["plot", *map(str, two_seeds), "--out", str(svg), "--label", "x", "x"]) == 0
    assert svg.read_text().lstrip().startswith("<?xml") and "<path" in svg.read_text()


@pytest.mark.parametrize("args, message", [
    (["plot", "no/such/run"], "no such run directory"),
    (["plot", "{run}", "--out", "x.jpeg"], "unknown image format"),
    (["plot", "{run}", "--size", "12x5"], "--size"),
    (["plot", "{run}", "{run}", "--label", "only-one"], "one label per run"),
    (["plot", "{run}", "{run}/"], "given twice"),  # was n=2 of one run: drawn as two seeds
])
def test_plot_bad_input_is_one_line(two_seeds, tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    args = [a.replace("{run}", str(two_seeds[0])) for a in args]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())  # nothing written


def test_parse_size():
    assert parse_size("800x500") == (800, 500)
    with pytest.raises(CanterError):
        parse_size("800")


@pytest.mark.parametrize("size", [(0, 0), (100_000, 100_000), (-5, 300), (800.5, 500), (800,)])
def test_plot_runs_refuses_a_bad_size_from_python_too(two_seeds, tmp_path, size):
    """Only canter plot's --size was checked: plot_runs(..., size=(0, 0)) raised matplotlib's SystemError, and
    (100000, 100000) a MemoryError after trying to allocate 40 GB; plot_runs refuses them before drawing."""
    from canter.errors import CanterError
    from canter.tools.plot import plot_runs

    with pytest.raises(CanterError, match=r"size must be \(WIDTH, HEIGHT\)"):
        plot_runs(two_seeds, out=tmp_path / "c.png", size=size)
    assert not (tmp_path / "c.png").exists()


def test_plot_labels_given_with_repeated_flags_all_count(two_seeds, tmp_path, capsys, monkeypatch):
    """``--label a --label b`` kept the last flag's labels alone: 'got 1 labels for 2 runs' for two runs, and one
    run drawn silently as 'b'. Repeated flags add up, as ``--label a b`` does."""
    import canter.tools.plot as plot

    seen = []
    monkeypatch.setattr(plot, "plot_runs", lambda run_dirs, labels=None, **kw: seen.append(labels) or "x.png")
    runs = list(map(str, two_seeds))
    assert main(["plot", *runs, "--label", "a", "--label", "b"]) == 0
    assert main(["plot", *runs, "--label", "a", "b"]) == 0
    assert seen == [["a", "b"], ["a", "b"]]
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    assert main(["plot", runs[0], "--label", "a", "--label", "b"]) == 2
    assert "got 2 labels for 1 runs" in capsys.readouterr().err


def test_a_curve_with_nan_returns_keeps_its_gap():
    """A NaN reward (divergence_guard off) makes the rolling return NaN for the next reward_window episodes:
    canter plot dropped the grid points where it was NaN, and the line went straight over them, as though the
    return had been 1 throughout. The points stay, NaN (a gap in the line); a range no run covers is still left out."""
    xs, ys = np.arange(5.0), np.array([1.0, np.nan, np.nan, np.nan, 1.0])
    grid, mean, std = mean_band([(xs, ys)], points=5)
    np.testing.assert_array_equal(grid, xs)
    np.testing.assert_array_equal(mean, ys)
    other = (np.array([10.0, 14.0]), np.array([2.0, 2.0]))  # nothing between 4 and 10
    grid, mean, _ = mean_band([(xs, ys), other], points=15)
    np.testing.assert_array_equal(grid, [0, 1, 2, 3, 4, 10, 11, 12, 13, 14])
    np.testing.assert_array_equal(mean, [1, np.nan, np.nan, np.nan, 1, 2, 2, 2, 2, 2])


def test_benchmark_panel_y_label_fits_in_its_figure(tmp_path):
    """benchmark.png's panels are 340 pixels high and the y label 'return (rolling mean of 100 training episodes)'
    one 322-pixel line: its first word was cut off at the top of the image (as in any plot --size below ~330
    pixels high). The label wraps where it would not fit."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from canter.tools.plot import draw_groups, new_figure
    from canter.tools.rundata import RunData

    steps = np.array([10.0, 500.0, 3000.0])
    history = {"step": steps, "wall_time": steps / 100, "episode_return": steps / 10, "rolling_return": steps / 10}
    fig = new_figure(440, 340)
    ax = fig.add_subplot()
    draw_groups(ax, group_runs([RunData(tmp_path, {"algo": "ppo", "env": "CartPole-v1"}, {}, history)]))
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    box = ax.yaxis.label.get_window_extent(canvas.get_renderer())
    assert 0 <= box.y0 and box.y1 <= fig.bbox.height, (box.y0, box.y1)
