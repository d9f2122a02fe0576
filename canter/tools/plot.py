"""Learning curves from run directories: seeds of one algorithm and env become a mean with a band.

``canter plot RUN_DIR... [--x steps|time] [--label ...] [--out FILE] [--size WxH] [--policy NAME]``. The curve of
a run is its ``rolling_return`` (mean of the last 100 training episodes) from ``history.parquet``,
against env steps or wall-clock seconds. Runs with the same label (by default ``"ALGO ENV"``) are
interpolated onto one grid and drawn as their mean with a band of one standard deviation across
runs; a run contributes only inside the range it covers, except that a run which stopped because
it reached its target keeps its last value to the end (it is solved, not gone). Each target reward
is a dashed line. A run of several policies is one curve per policy (:mod:`canter.tools.plot_policies`).
"""
from __future__ import annotations

import warnings
from collections.abc import Sequence
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np

from canter.errors import CanterError
from canter.tools.rundata import RunData, load_run

FORMATS = ("png", "svg", "pdf")
X_AXES = {"steps": ("step", "environment steps"), "time": ("wall_time", "wall-clock seconds")}
#: the tables a learning curve is drawn from (:func:`run_curve`); a run's update statistics are not read
CURVE_TABLES = ("history", "evaluations")


def new_figure(width_px: int, height_px: int, dpi: int = 100) -> Any:
    """A matplotlib Figure of exactly ``width_px`` x ``height_px`` pixels (no pyplot state)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi, layout="constrained")


def run_curve(run: RunData, x: str = "steps") -> tuple[np.ndarray, np.ndarray]:
    """(x, rolling training return) of one run; evaluation means when it finished no episode.

    Episodes that ended on the same step (several envs at once: Pendulum's or MuJoCo's fixed-length
    episodes) are one point, the rolling return after all of them: the rows between hold partial means
    that depend on the envs' order, and the curve interpolated toward the first of them."""
    if x not in X_AXES:
        raise CanterError(f"--x must be 'steps' or 'time', got '{x}'")
    col = X_AXES[x][0]
    if len(run.history.get("rolling_return", ())):
        table, ycol = run.history, "rolling_return"
    else:
        table, ycol = run.evaluations, "mean_return"
    if not len(table.get(ycol, ())):
        return np.zeros(0), np.zeros(0)
    xs, ys = table[col], table[ycol]
    last = np.r_[xs[1:] != xs[:-1], True]  # the last row at each x
    return xs[last], ys[last]


def lone_markers(y: np.ndarray) -> dict[str, Any]:
    """``ax.plot`` keywords that mark the points of the line ``y`` that no segment draws: a finite value whose
    neighbours are NaN or absent (a curve of one point, such as a run of a single logged update, or one between two
    NaN stretches) is otherwise invisible, a line with no length. Empty where there is none."""
    y = np.asarray(y, dtype=np.float64)
    finite = np.isfinite(y)
    before = np.r_[False, finite[:-1]]
    after = np.r_[finite[1:], False]
    lone = np.flatnonzero(finite & ~before & ~after)
    return {"marker": "o", "markersize": 3, "markevery": lone.tolist()} if len(lone) else {}


#: the equal stretches of x a long curve is cut into for drawing (about one per pixel column of a report's plot)
DRAW_BINS = 1000


def _bins(x: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's bin (``bins`` equal stretches of ``x`` when it never decreases, else of the row numbers), a
    contiguous run of rows, and the first row of each non-empty bin."""
    n = len(x)
    with np.errstate(invalid="ignore"):
        ordered = n > 1 and bool(np.all(x[1:] >= x[:-1])) and x[-1] > x[0]  # NaN: False
    if ordered:
        which = np.searchsorted(np.linspace(x[0], x[-1], bins + 1)[1:-1], x, side="right")
    else:
        which = np.arange(n) * bins // max(n, 1)
    return which, np.flatnonzero(np.r_[True, which[1:] != which[:-1]])


def envelope_rows(x: np.ndarray, y: np.ndarray, bins: int = DRAW_BINS) -> np.ndarray:
    """The rows of the curve ``(x, y)`` to draw: every row when there are at most ``4 * bins``; else the first,
    last, lowest and highest of each of ``bins`` equal stretches of x (NaN rows are never the lowest or highest),
    in order, so a line through them looks like the whole curve at about one stretch per pixel column."""
    n = len(x)
    if n <= 4 * bins:
        return np.arange(n)
    which, starts = _bins(x, bins)
    ends = np.r_[starts[1:], n] - 1
    keep = [starts, ends]
    for reduce in (np.fmin, np.fmax):  # NaN-ignoring: a bin of NaN only has no lowest or highest row
        extreme = reduce.reduceat(y, starts)
        hits = np.flatnonzero(y == np.repeat(extreme, np.diff(np.r_[starts, n])))
        keep.append(hits[np.r_[True, which[hits][1:] != which[hits][:-1]]] if len(hits) else hits)
    return np.unique(np.concatenate(keep))


def envelope_band(x: np.ndarray, y: np.ndarray, bins: int = DRAW_BINS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(middle x, lowest y, highest y) of each of ``bins`` equal stretches of x holding a finite y: the band that
    stands for a scatter of more points than a plot can show."""
    which, starts = _bins(x, bins)
    ends = np.r_[starts[1:], len(x)] - 1
    with np.errstate(invalid="ignore"):
        lo, hi = np.fmin.reduceat(y, starts), np.fmax.reduceat(y, starts)
    finite = np.isfinite(lo) & np.isfinite(hi)
    return ((x[starts] + x[ends]) / 2)[finite], lo[finite], hi[finite]


def mean_band(curves: Sequence[tuple[np.ndarray, np.ndarray]], points: int = 200,
              hold: Sequence[bool] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interpolate curves onto a shared grid; return (grid, mean, std) over the runs covering each point.

    A curve covers its own x range; with ``hold[i]`` true, curve ``i`` also keeps its last value
    up to the end of the grid (a run that stopped because it reached its target). A curve of one point, not held,
    covers nothing beside curves that cover a stretch (:func:`_stack`).
    """
    grid, stack = _stack(curves, points, hold)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a point where every covering run is NaN: NaN, a gap
        mean = np.nanmean(stack, axis=0)
        std = np.nanstd(stack, axis=0)
    return grid, mean, std


def _stack(curves: Sequence[tuple[np.ndarray, np.ndarray]], points: int = 200,
           hold: Sequence[bool] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The grid of :func:`mean_band` and each non-empty curve's values on it (NaN outside its range), ``[runs, grid]``.
    The grid's points inside no curve's range are left out; those inside one where it is NaN (a NaN reward's
    rolling returns) are kept, so the line has a gap there instead of going straight over them."""
    hold = [False] * len(curves) if hold is None else list(hold)
    kept = [(c, h) for c, h in zip(curves, hold) if len(c[0])]
    # a curve of one point (a run of a single episode, not held) has no stretch to cover: beside curves that have
    # one it is left out, as it is wherever its point falls between two grid points; it counted only where it was
    # the grid's first (or last) point, a jump from its value to the others' mean at the line's start
    spans = [h or xs[-1] > xs[0] for (xs, _), h in kept]
    if any(spans):
        kept = [k for k, span in zip(kept, spans) if span]
    if not kept:
        return np.zeros(0), np.zeros((0, 0))
    lo = min(float(xs[0]) for (xs, _), _ in kept)
    hi = max(float(xs[-1]) for (xs, _), _ in kept)
    grid = np.linspace(lo, hi, points) if hi > lo else np.array([lo])
    # a finite stretch between NaN ones (one rolling return between two NaN rewards' windows) narrower than the grid's
    # spacing: every grid point near it interpolates with a NaN neighbour, and the stretch was lost (a run whose
    # only finite values were such was empty axes); its ends are grid points too (np.interp gives a point its own value)
    ends = [_finite_stretch_ends(xs, ys) for (xs, ys), _ in kept]
    grid = np.union1d(grid, np.concatenate(ends)) if any(len(e) for e in ends) else grid
    stack = np.full((len(kept), grid.size), np.nan)
    covered = np.zeros(grid.size, dtype=bool)
    for i, ((xs, ys), held) in enumerate(kept):
        inside = (grid >= xs[0]) & ((grid <= xs[-1]) | held)
        stack[i, inside] = np.interp(grid[inside], xs, ys)  # np.interp holds the last value beyond xs[-1]
        covered |= inside
    return grid[covered], stack[:, covered]


def _finite_stretch_ends(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """The x of each finite value of the curve (xs, ys) next to a non-finite one: the ends of its finite stretches
    that border a NaN (or infinite) stretch."""
    finite = np.isfinite(ys)
    bad = ~finite
    return xs[finite & (np.r_[False, bad[:-1]] | np.r_[bad[1:], False])]


def runs_in_band(curves: Sequence[tuple[np.ndarray, np.ndarray]], points: int = 200,
                 hold: Sequence[bool] | None = None) -> int:
    """How many of ``curves`` have a value at some point of :func:`mean_band`'s grid, i.e. count in its mean (a
    run whose few episodes all fall between two grid points does not, nor one of a single point beside runs that
    cover a stretch)."""
    return int(np.isfinite(_stack(curves, points, hold)[1]).any(axis=1).sum())


def group_runs(runs: Sequence[RunData], labels: Sequence[str] | None = None) -> dict[str, list[RunData]]:
    """Group runs by label (default ``"ALGO ENV"``), keeping the order of first appearance."""
    if labels is not None and len(labels) not in (0, len(runs)):
        raise CanterError(f"--label needs one label per run directory: got {len(labels)} labels for {len(runs)} runs")
    groups: dict[str, list[RunData]] = {}
    for i, run in enumerate(runs):
        label = labels[i] if labels else f"{run.algo} {run.env}"
        groups.setdefault(label, []).append(run)
    return groups


def draw_groups(ax: Any, groups: dict[str, list[RunData]], x: str = "steps",
                colors: dict[str, str] | None = None) -> None:
    """Draw each group's mean curve and band, and each distinct target reward, on ``ax``.

    ``colors`` maps labels to colors (so that one label has one color across several panels).
    """
    targets: dict[float, dict[str, Any]] = {}  # each target: the groups that have it, by label, and their colours
    shown = 0
    # the runs drawn: one with no finished episode or evaluation yet (killed early) adds no curve, so it
    # counts neither in a group's n nor for the y label
    every = [r for runs in groups.values() for r in runs if len(run_curve(r, x)[0])]
    for label, runs in groups.items():
        curves = [run_curve(r, x) for r in runs]
        hold = [r.summary.get("stop_reason") == "target_reward" for r in runs]
        grid, mean, std = mean_band(curves, hold=hold)
        if not grid.size:
            continue
        n = runs_in_band(curves, hold=hold)  # the runs in the mean (not one whose only episode is off the grid)
        (line,) = ax.plot(grid, mean, label=f"{label} (n={n})" if n > 1 else label, linewidth=1.8,
                          color=(colors or {}).get(label), **lone_markers(mean))  # a lone point: a marker
        if n > 1:
            ax.fill_between(grid, mean - std, mean + std, color=line.get_color(), alpha=0.2, linewidth=0)
        shown += 1
        for r in runs:
            if r.target_reward is not None:
                targets.setdefault(r.target_reward, {})[label] = line.get_color()
    low, high = ax.get_ylim() if ax.lines else (0.0, 0.0)
    span = max(high - low, abs(high), abs(low), 1.0)  # a line beyond one span of the data would flatten its curves
    for target in sorted(targets):
        color, label = _target_style(target, targets[target], shown)  # shown: the groups drawn
        if ax.lines and not low - span <= target <= high + span:  # listed, not drawn (target 1e9 over returns of 500)
            ax.plot([], [], color=color, linestyle="--", linewidth=1.0,
                    label=f"{label} ({'above' if target > high else 'below'} the axis)")
            continue
        ax.axhline(target, color=color, linestyle="--", linewidth=1.0, label=label)
    training = [bool(len(r.history.get("rolling_return", ()))) for r in every]
    offline = [r.config.get("dataset") is not None for r in every]  # steps are gradient updates
    xlabel = X_AXES[x][1]
    if x == "steps" and any(offline):
        xlabel = "gradient updates" if all(offline) else "steps (gradient updates for offline runs)"
    ax.set_xlabel(xlabel)
    window = {r.config.get("reward_window", 100) for r in every}
    rolling = f"rolling mean of {window.pop() if len(window) == 1 else 'the last'} training episodes"
    ax.set_ylabel(f"return ({rolling})" if all(training) else "mean evaluation return" if not any(training)
                  else "return (training rolling mean, or evaluation mean)", wrap=True)  # a short panel: two lines
    ax.grid(alpha=0.3)
    legend(ax)


def _target_style(target: float, owners: dict[str, Any], groups: int) -> tuple[Any, str]:
    """(colour, legend label) of the target line ``target`` that the groups ``owners`` (label -> line colour) have, of
    ``groups`` drawn: one group's in its colour, named after it when there are others; one several groups share in
    grey, naming them unless every group has it."""
    named = "" if len(owners) >= groups else f" ({', '.join(owners)})"
    if len(owners) == 1:
        return next(iter(owners.values())), f"target {target:g}{named}"
    return "0.35", f"target {target:g}{named}"


def legend(ax: Any) -> None:
    """Draw ``ax``'s legend if anything on it has a label (matplotlib warns about an empty legend)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize="small")


def save_figure_atomic(fig: Any, path: Path, fmt: str = "png", creator: str | None = None) -> Path:
    """Render ``fig`` and write it with :func:`~canter.atomic.atomic_write` (no half-written image);
    ``creator`` (e.g. :data:`PLOT_CREATOR`) goes into the image's metadata in place of matplotlib's own:
    PNG's ``Software`` text chunk, SVG's and PDF's ``Creator``."""
    import io

    from canter.atomic import atomic_write

    buf = io.BytesIO()
    metadata = None if creator is None else {"Software" if fmt == "png" else "Creator": creator}
    fig.savefig(buf, format=fmt, metadata=metadata)
    atomic_write(path, buf.getvalue())
    return path


#: the creator ``canter plot`` writes into its images' metadata; an existing ``--out`` is replaced only with it
PLOT_CREATOR = "canter plot"


def is_canter_plot(path: Path) -> bool:
    """Whether the file ``path`` is an image that ``canter plot`` wrote: :data:`PLOT_CREATOR` in a PNG's
    ``Software`` text chunk (before the image data), an SVG's ``dc:creator`` or a PDF's ``/Creator``
    (its info dictionary, at the end of the file)."""
    import re

    try:
        with open(path, "rb") as f:
            head = f.read(8192)
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 65536))
            tail = f.read()
    except OSError:
        return False
    mark = PLOT_CREATOR.encode()
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return b"tEXtSoftware\x00" + mark in head
    if head.startswith(b"%PDF-"):
        return b"/Creator (" + mark + b")" in tail
    return re.search(rb"<dc:creator>\s*<cc:Agent>\s*<dc:title>" + re.escape(mark) + rb"</dc:title>", head) is not None


#: the smallest and largest image side ``--size`` takes, in pixels
SIZE_RANGE = (100, 10000)


def _size_ok(size: Any) -> bool:
    """Whether ``size`` is a (width, height) pair of whole numbers of pixels within :data:`SIZE_RANGE`."""
    return (isinstance(size, (tuple, list)) and len(size) == 2 and all(
        isinstance(v, Integral) and not isinstance(v, bool) and SIZE_RANGE[0] <= v <= SIZE_RANGE[1] for v in size))


def parse_size(text: str) -> tuple[int, int]:
    """``"800x500"`` -> (800, 500) pixels."""
    w, sep, h = text.lower().partition("x")
    try:
        size = (int(w), int(h))
    except ValueError:
        size = None
    if not sep or not _size_ok(size):
        raise CanterError(f"--size must be WIDTHxHEIGHT in pixels between {SIZE_RANGE[0]} and {SIZE_RANGE[1]}, "
                          f"e.g. 800x500, got '{text}'")
    return size  # type: ignore[return-value]  # _size_ok: two ints


def check_output(out: str | Path) -> tuple[Path, str]:
    """The output path and its format (png, svg or pdf, from the suffix); an existing file there must be
    an image that ``canter plot`` wrote (:func:`is_canter_plot`), which is replaced."""
    path = Path(out)
    fmt = path.suffix.lower().lstrip(".")
    if path.is_dir():
        raise CanterError(f"--out '{path}' is a directory; give an image file name, e.g. {path / 'curves.png'}")
    if not fmt and path.name.startswith(".") and path.name[1:].lower() in FORMATS:  # '.png': a name, no suffix
        raise CanterError(f"--out '{path}' has no file name before '{path.name}'; give one, e.g. "
                          f"{path.with_name('curves' + path.name)}")
    if not fmt and path.name:
        # a hidden name ('.jpg', a format canter does not write) or a trailing dot: not 'e.g. .jpg.png', 'curves..png'
        stem = path.name.rstrip(".")
        example = "curves.png" if not stem or (stem.startswith(".") and "." not in stem[1:]) else stem + ".png"
        raise CanterError(f"--out '{path}' has no image suffix; end it in .png, .svg or .pdf, e.g. "
                          f"{path.with_name(example)}")
    if fmt not in FORMATS:
        from canter.errors import unknown

        raise unknown("image format", fmt or "(none)", FORMATS)
    if path.exists() and not is_canter_plot(path):
        raise CanterError(f"--out '{path}' exists and is not an image canter plot wrote; it is not overwritten: "
                          "remove it or choose another file")
    return path, fmt


def plot_runs(run_dirs: Sequence[str | Path], x: str = "steps", labels: Sequence[str] | None = None,
              out: str | Path = "curves.png", size: tuple[int, int] = (800, 500), title: str | None = None,
              policies: Sequence[str] | None = None) -> Path:
    """Plot the learning curves of ``run_dirs`` into ``out`` (PNG, SVG or PDF); returns the path.

    A run of several policies (``policies: type | agent``) is drawn as one curve per policy, its group's label
    followed by ``" / POLICY"`` (:mod:`canter.tools.plot_policies`); ``policies`` names the ones to draw (default:
    all). Raises :class:`CanterError` for a missing run directory or one given twice, a bad ``x``, a label
    count that does not match, an unknown policy, an unknown image format, an existing ``out`` that is not an
    image ``canter plot`` wrote or a ``size`` outside 100 to 10000 pixels -- before anything is written.
    """
    from canter.tools.plot_policies import check_policies, split_policies

    if isinstance(policies, str):  # one name, not its letters
        policies = [policies]
    if not _size_ok(size):  # matplotlib: a SystemError for (0, 0), a MemoryError for (100000, 100000)
        raise CanterError(f"size must be (WIDTH, HEIGHT) in whole pixels between {SIZE_RANGE[0]} and {SIZE_RANGE[1]}, "
                          f"e.g. (800, 500), got {size!r}")
    if not run_dirs:
        raise CanterError("give at least one run directory")
    if x not in X_AXES:
        raise CanterError(f"--x must be 'steps' or 'time', got '{x}'")
    path, fmt = check_output(out)
    runs = [load_run(d, CURVE_TABLES) for d in run_dirs]
    groups = group_runs(runs, labels)
    for label, members in groups.items():  # a run given twice (overlapping globs) would count twice in the mean
        seen: dict[Path, Path] = {}
        for r in members:
            first = seen.setdefault(r.dir.resolve(), r.dir)
            if first is not r.dir:
                also = "" if first == r.dir else f" (also as '{first}')"
                raise CanterError(f"run directory '{r.dir}' is given twice in group '{label}'{also}; each run counts "
                                  "once in its group's mean")
    selected = check_policies(runs, policies or ())
    if not any(len(run_curve(r, x)[0]) for r in runs):
        raise CanterError("none of the runs has finished an episode or an evaluation yet: nothing to plot")
    groups = split_policies(groups, selected)
    drawn = [r for members in groups.values() for r in members]
    if not any(np.isfinite(run_curve(r, x)[1]).any() for r in drawn):  # an empty image, its axes about 0, exit code 0
        raise CanterError("every return of the runs is NaN or infinite (a NaN reward, or a policy that diverged): "
                          "nothing to plot")
    fig = new_figure(*size)
    ax = fig.add_subplot()
    draw_groups(ax, groups, x)
    envs = sorted({r.env for r in runs})
    ax.set_title(title or ", ".join(envs))
    return save_figure_atomic(fig, path, fmt, creator=PLOT_CREATOR)
