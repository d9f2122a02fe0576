"""``canter report RUN_DIR``: one self-contained ``report.html`` a person can open anywhere.

Everything is inside the file: CSS inline, plots as PNG data URIs, videos as MP4 data URIs, no
scripts and no external references, so it needs no network and no server. Sections: summary,
learning curve (training episodes, rolling return, evaluations, target), the evaluations' success rate
(goal envs), the return distribution of the best checkpoint over fresh evaluation episodes, update
statistics over time, throughput, checkpoints, the recorded videos and the resolved config.
"""
from __future__ import annotations

import base64
import html
import io
import os
from numbers import Integral
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from canter.atomic import atomic_write
from canter.errors import CanterError
from canter.tools.plot import DRAW_BINS, envelope_band, envelope_rows, legend, lone_markers, new_figure, run_curve
from canter.tools.report_policies import draw_policy_means, policy_section
from canter.tools.rundata import RunData, checkpoints, load_run

MAX_VIDEO_BYTES = 20 * 1024 * 1024  # all embedded videos together
#: in the head of every report: ``--out`` overwrites an existing file only if it has this mark
GENERATOR = '<meta name="generator" content="canter report">'
SKIP_UPDATE_COLUMNS = ("step", "wall_time", "steps_per_second")
#: training episodes drawn as dots up to this many; more: the band they cover (a long run has millions)
MAX_POINTS = 4 * DRAW_BINS
#: evaluations drawn with error bars up to this many; more: a line in a band
MAX_MARKERS = 200

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f6f7f9;color:#1d2430}
main{max-width:1000px;margin:0 auto;padding:24px}
h1{font-size:1.5rem;margin:0 0 4px}h2{font-size:1.15rem;margin:28px 0 8px;border-bottom:1px solid #d8dce3;padding-bottom:4px}
.sub{color:#5b6475;margin:0 0 16px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{background:#fff;border:1px solid #d8dce3;border-radius:6px;padding:8px 12px;min-width:120px}
.card b{display:block;font-size:1.1rem}.card span{color:#5b6475;font-size:.8rem}
.ok{color:#17803d}.no{color:#b4232c}
img{max-width:100%;height:auto;background:#fff;border:1px solid #d8dce3;border-radius:6px}
table{border-collapse:collapse;background:#fff;font-size:.9rem}
th,td{border:1px solid #d8dce3;padding:4px 8px;text-align:right}th{background:#eef0f4}td:first-child{text-align:left}
pre{background:#fff;border:1px solid #d8dce3;border-radius:6px;padding:12px;overflow:auto;font-size:.85rem}
video{max-width:100%;border:1px solid #d8dce3;border-radius:6px;background:#000}
figure{margin:0 0 12px}figcaption{color:#5b6475;font-size:.85rem}
.note{color:#5b6475;font-style:italic}
"""


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _img(fig: Any, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="{_png(fig)}">'


def _offline(run: RunData) -> bool:
    """Whether the run trained on a dataset: its steps are gradient updates (as ``canter plot`` says)."""
    return run.config.get("dataset") is not None


def _steps_label(run: RunData) -> str:
    return "gradient updates" if _offline(run) else "environment steps"


def _drawn(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The points of the curve (x, y) to draw: all, or a long curve's :func:`~canter.tools.plot.envelope_rows`."""
    rows = envelope_rows(x, y)
    return x[rows], y[rows]


def learning_curve(run: RunData) -> str:
    """Training episode returns, their rolling mean, evaluations (mean +- std) and the target."""
    fig = new_figure(960, 420)
    ax = fig.add_subplot()
    h, e = run.history, run.evaluations
    if len(h.get("step", ())):
        if len(h["step"]) <= MAX_POINTS:
            ax.scatter(h["step"], h["episode_return"], s=6, alpha=0.25, color="#7f8ea3", label="training episode")
        else:  # more dots than pixels: the band they cover
            ax.fill_between(*envelope_band(h["step"], h["episode_return"]), color="#7f8ea3", alpha=0.45, linewidth=0,
                            label=f"training episodes ({len(h['step']):,}; min–max band)")
        window = run.config.get("reward_window", 100)  # the episodes history.parquet's rolling_return averages
        # one point per step, after all of its episodes (canter plot's curve): the rows between hold partial
        # means that depend on the envs' order
        if not draw_policy_means(ax, run, _drawn):  # a run of several policies: one line each, not their mix
            x, y = _drawn(*run_curve(run))
            ax.plot(x, y, color="#1f77b4", linewidth=1.8, label=f"rolling mean ({window} episodes)", **lone_markers(y))
    if len(e.get("step", ())):
        label = "evaluation mean ± std"
        if len(e["step"]) <= MAX_MARKERS:
            ax.errorbar(e["step"], e["mean_return"], yerr=e["std_return"], fmt="o-", color="#d62728", markersize=4,
                        capsize=3, linewidth=1.2, label=label)
        else:  # too many error bars to tell apart: the mean as a line in a band of ± std
            rows = envelope_rows(e["step"], e["mean_return"])
            step, mean, std = e["step"][rows], e["mean_return"][rows], e["std_return"][rows]
            ax.fill_between(step, mean - std, mean + std, color="#d62728", alpha=0.2, linewidth=0)
            ax.plot(step, mean, color="#d62728", linewidth=1.2, label=label, **lone_markers(mean))
    if run.target_reward is not None:
        ax.axhline(run.target_reward, color="0.35", linestyle="--", linewidth=1.0, label=f"target {run.target_reward:g}")
    ax.set_xlabel(_steps_label(run))
    ax.set_ylabel("episode return")
    ax.grid(alpha=0.3)
    legend(ax)
    return _img(fig, "learning curve")


def _success_rates(run: RunData) -> tuple[np.ndarray, np.ndarray]:
    """(steps, success rates) of the evaluations whose env reported ``info["is_success"]`` (goal envs); empty where
    none did (the evaluation table has no ``success_rate`` column, or only nulls)."""
    e = run.evaluations
    rate = e.get("success_rate", np.zeros(0))
    rows = np.isfinite(rate)
    return e["step"][rows] if rows.any() else np.zeros(0), rate[rows]


def success_curve(run: RunData) -> str:
    """The evaluations' success rate against steps (goal envs), under its own heading; nothing where no
    evaluation reported one."""
    steps, rate = _success_rates(run)
    if not len(rate):
        return ""
    fig = new_figure(960, 300)
    ax = fig.add_subplot()
    x, y = _drawn(steps, 100 * rate)
    ax.plot(x, y, color="#17803d", linewidth=1.2, marker="o" if len(x) <= MAX_MARKERS else None, markersize=3,
            label="evaluation success rate")
    ax.set_ylim(-2, 102)
    ax.set_xlabel(_steps_label(run))
    ax.set_ylabel("success rate (%)")
    ax.grid(alpha=0.3)
    legend(ax)
    return f"<h2>Success rate</h2>{_img(fig, 'success rate')}"


def eval_distribution(run: RunData, episodes: int, seed: int = 12345) -> tuple[str, str]:
    """Histogram of ``episodes`` fresh episodes of the best checkpoint, with the policy its run evaluated
    (deterministic unless ``eval_deterministic: false``), as ``canter eval`` plays them (HTML, caption)."""
    from canter.api import find_checkpoint, load
    from canter.trainers.evaluation import evaluate_agent

    base = find_checkpoint(run.dir)
    # canter eval's episodes (its env copies and vectorization): the same seed gives the same episodes as
    # `canter eval RUN_DIR --episodes N`
    # the checkpoint found above, not the run directory again: a run still training may save its first 'best'
    # in between, and the caption would name one checkpoint under the histogram of another
    result = evaluate_agent(load(base), episodes=episodes, seed=seed)
    returns = np.asarray(result.returns, dtype=np.float64)
    # a multi-agent env: each episode gives every agent's return, and the histogram and statistics are over them all
    per = f" ({len(returns)} returns, one per agent and episode)" if len(returns) != episodes else ""
    kind = "deterministic" if getattr(result, "deterministic", True) else "stochastic"
    where = f"{episodes} {kind} episodes{per} of checkpoint '{base.name}' (evaluation seed {seed})"
    rate = getattr(result, "success_rate", None)  # goal envs: the episodes that reported info["is_success"]
    if rate is not None:
        where += f", success rate {rate:.0%}"
    finite = returns[np.isfinite(returns)]  # a NaN policy or env (divergence guard off): no histogram range
    bad = len(returns) - len(finite)
    if not len(finite):
        return ('<p class="note">No histogram: no return was a finite number.</p>',
                f"{where}: every return was {_non_finite(returns)}")
    if bad:
        where += f"; {bad} returned {_non_finite(returns[~np.isfinite(returns)])}, left out: {len(finite)} shown"
    fig = new_figure(960, 340)
    ax = fig.add_subplot()
    bins = min(20, max(5, len(np.unique(finite))))
    ax.hist(finite, bins=bins, color="#2ca02c", alpha=0.8, edgecolor="white")
    ax.axvline(finite.mean(), color="#1d2430", linewidth=1.5, label=f"mean {finite.mean():.1f}")
    ax.axvline(np.median(finite), color="#1d2430", linestyle=":", linewidth=1.5, label=f"median {np.median(finite):.1f}")
    ax.set_xlabel("episode return")
    ax.set_ylabel("episodes")
    legend(ax)
    q25, q75 = np.quantile(finite, [0.25, 0.75])
    target = "" if run.target_reward is None else f"; target {run.target_reward:g}"
    caption = (f"{where}: mean {finite.mean():.2f} ± {finite.std():.2f}, median {np.median(finite):.2f}, "
               f"IQR [{q25:.2f}, {q75:.2f}], min {finite.min():.2f}, max {finite.max():.2f}{target}")
    return _img(fig, "evaluation return distribution"), caption


def _non_finite(returns: np.ndarray) -> str:
    """``NaN``, ``inf`` or ``-inf``, or the ones of these that ``returns`` (all non-finite) holds, joined by "or"."""
    kinds = [k for k, hit in (("NaN", np.isnan(returns).any()), ("inf", (returns == np.inf).any()),
                              ("-inf", (returns == -np.inf).any())) if hit]
    return " or ".join(kinds)


def update_stats(run: RunData) -> str:
    """One small panel per update statistic (losses, entropy, KL, ...) against env steps."""
    u = run.updates
    names = [k for k in u if k not in SKIP_UPDATE_COLUMNS and np.isfinite(u[k]).any()]
    if not names or not len(u.get("step", ())):
        return '<p class="note">No update statistics were logged.</p>'
    cols = 3
    rows = -(-len(names) // cols)
    fig = new_figure(960, 230 * rows)
    for i, name in enumerate(names):
        ax = fig.add_subplot(rows, cols, i + 1)
        x, y = _drawn(u["step"], u[name])
        ax.plot(x, y, color="#9467bd", linewidth=1.0, **lone_markers(y))
        ax.set_title(name, fontsize="small")
        ax.tick_params(labelsize="x-small")
        ax.grid(alpha=0.3)
    return _img(fig, "update statistics")


def throughput(run: RunData) -> str:
    """Env steps per second over the run."""
    u = run.updates
    if not len(u.get("steps_per_second", ())):
        return '<p class="note">No throughput was logged.</p>'
    fig = new_figure(960, 300)
    ax = fig.add_subplot()
    x, y = _drawn(u["step"], u["steps_per_second"])
    ax.plot(x, y, color="#ff7f0e", linewidth=1.0, label="between records", **lone_markers(y))
    counts = current_summary(run) or saved_counts(run)  # none: the saved tables, as the cards
    steps, wall = counts.get("steps"), counts.get("wall_seconds")
    if steps and wall:
        ax.axhline(steps / wall, color="0.35", linestyle="--", linewidth=1.0,
                   label=f"whole run, with evaluations {steps / wall:,.0f}")
    ax.set_xlabel(_steps_label(run))
    ax.set_ylabel(f"{'updates' if _offline(run) else 'steps'} / s")
    ax.grid(alpha=0.3)
    legend(ax)
    return _img(fig, "throughput")


def _table(rows: list[dict[str, Any]], columns: list[tuple[str, str]]) -> str:
    head = "".join(f"<th>{html.escape(title)}</th>" for _, title in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(r.get(k)))}</td>" for k, _ in columns) + "</tr>"
                   for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _cell(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:,.2f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def _rate(per_second: float) -> str:
    """A throughput for a card: whole numbers from 100 up (it was '12,299.05'), one decimal below."""
    return f"{per_second:,.0f}" if per_second >= 100 else f"{per_second:,.1f}"


def videos(run: RunData) -> str:
    """The recorded videos (``videos/*.mp4``) as embedded players, newest first, up to a size cap."""
    from canter.tools.video import video_index

    entries = {e["file"]: e for e in video_index(run.dir)}
    # newest first by modification time (names alone put play-episode-* files after every step-* one)
    # a hidden name is a video still being written, or one whose play was killed (canter.play_video.PartialVideo): not one
    files = sorted((p for p in (run.dir / "videos").glob("*.mp4") if not p.name.startswith(".")),
                   key=lambda p: (p.stat().st_mtime_ns, p.name), reverse=True)
    # a link out of the run's videos folder (a run directory from elsewhere) is not embedded: the report, made
    # to be shared, would carry the bytes of whatever file it points to
    inside = (run.dir / "videos").resolve()
    outside = [f.name for f in files if not (f.is_file() and f.resolve().parent == inside)]
    files = [f for f in files if f.name not in outside]
    if not files and not outside:
        return ('<p class="note">No video was recorded. Use <code>canter train --record-every N</code> or '
                '<code>canter play RUN_DIR --video-dir RUN_DIR/videos</code>.</p>')
    parts, used, left = [], 0, []
    for f in files:
        size = f.stat().st_size
        if used + size > MAX_VIDEO_BYTES:
            left.append(f.name)
            continue
        used += size
        e = entries.get(f.name, {})
        caption = f.name + (f" (step {e['step']:,}, return {e['return']:.1f})" if e else "")
        data = base64.b64encode(f.read_bytes()).decode()
        parts.append(f'<figure><video controls muted preload="metadata" src="data:video/mp4;base64,{data}"></video>'
                     f"<figcaption>{html.escape(caption)}</figcaption></figure>")
    if left:
        parts.append(f'<p class="note">Not embedded (size cap): {html.escape(", ".join(left))}</p>')
    if outside:
        parts.append(f'<p class="note">Not embedded (links out of the videos folder): {html.escape(", ".join(outside))}</p>')
    return "".join(parts)


def saved_counts(run: RunData) -> dict[str, Any]:
    """The numbers of a run without ``summary.json`` (still going, or killed) that its saved tables give: the last
    step and wall time in them, the history's episodes and the evaluation table's best and last mean return."""
    tables = (run.history, run.evaluations, run.updates)
    steps = [t["step"][-1] for t in tables if len(t.get("step", ()))]
    walls = [np.nanmax(t["wall_time"]) for t in tables if np.isfinite(t.get("wall_time", np.zeros(0))).any()]
    means = run.evaluations.get("mean_return", np.zeros(0))
    finite = means[np.isfinite(means)]
    return {"steps": int(max(steps)) if steps else None, "episodes": len(run.history.get("step", ())),
            "wall_seconds": float(max(walls)) if walls else None,
            "best_eval_return": float(finite.max()) if len(finite) else None,
            "last_eval_return": float(means[-1]) if len(finite) and np.isfinite(means[-1]) else None}


def current_summary(run: RunData) -> dict[str, Any]:
    """``summary.json``, unless there is none or it is out of date: a resumed run keeps the summary of its previous
    stop (stop_reason ``interrupted``) while it trains, and one killed then leaves it beside tables that went on."""
    s = run.summary
    if s.get("stop_reason") == "interrupted" and isinstance(s.get("steps"), (int, float)):
        saved = saved_counts(run)["steps"]
        if saved is not None and saved > s["steps"]:
            return {}
    return s


def _cards(run: RunData) -> str:
    # no (current) summary.json: what the saved tables hold, not dashes or an earlier stop's numbers beside their plots
    s = current_summary(run) or saved_counts(run)
    solved = s.get("solved")
    # a run without a target reward has nothing to solve (as canter train says 'finished', not 'not solved')
    outcome = ("no target", "outcome", "") if run.target_reward is None else (
        "solved" if solved else "not solved", "outcome", "ok" if solved else "no")
    if not current_summary(run):  # still going or killed: not (yet) solved or not solved
        outcome = ("unfinished", "outcome", "")
    items = [
        outcome,
        (_cell(s.get("best_eval_return")), "best eval return", ""),
        (_cell(s.get("last_eval_return")), "last eval return", ""),
        (_cell(run.target_reward), "target", ""),
        (_cell(s.get("steps")), "gradient updates (steps)" if _offline(run) else "env steps", ""),
        (_cell(s.get("episodes")), "episodes", ""),
        (_cell(s.get("updates")), "updates", ""),
        (f"{s['wall_seconds']:,.1f} s" if s.get("wall_seconds") is not None else "–", "wall time", ""),
        (_rate(s["steps"] / s["wall_seconds"]) if s.get("wall_seconds") else "–",
         "updates / s" if _offline(run) else "steps / s", ""),
        (str(s.get("stop_reason") or "–"), "stop reason", ""),
    ] + _success_cards(run) + ([(str(s["error"]), "stopped by an error", "no")] if s.get("error") else [])
    return '<div class="cards">' + "".join(
        f'<div class="card"><b class="{cls}">{html.escape(v)}</b><span>{html.escape(k)}</span></div>'
        for v, k, cls in items) + "</div>"


def _success_cards(run: RunData) -> list[tuple[str, str, str]]:
    """The best and last evaluation success rate, where the evaluations have one (goal envs); else none."""
    rate = _success_rates(run)[1]
    if not len(rate):
        return []
    return [(f"{rate.max():.0%}", "best eval success rate", ""), (f"{rate[-1]:.0%}", "last eval success rate", "")]


def code_version(summary: dict[str, Any]) -> str:
    """The report's line on the code that trained the run: canter's version, its git commit ("unknown" when the
    run recorded none) and, where the checkout had uncommitted changes, that the commit is not the whole story."""
    commit = summary.get("git_commit") or "unknown"
    dirty = " (uncommitted changes)" if summary.get("git_dirty") else ""
    return f"canter {summary.get('canter_version', '?')} · commit {commit}{dirty}"


def code_record(run: RunData) -> dict[str, Any]:
    """Where the report reads the run's code version: ``summary.json`` where it is current, else (a run still going,
    or killed) its ``checkpoints/last`` (else ``best``, else the newest periodic ``step-N``) JSON, which records the
    same keys, else the stale summary."""
    if current_summary(run):
        return run.summary
    from canter.checkpoint import read_metadata
    from canter.checkpoint_keep import periodic_checkpoints

    periodic = periodic_checkpoints(Path(run.dir) / "checkpoints")
    for name in ("last", "best", *(periodic[step] for step in sorted(periodic, reverse=True))):
        try:
            return read_metadata(Path(run.dir) / "checkpoints" / name)
        except (CanterError, OSError):
            continue
    return run.summary


def render(run: RunData, eval_episodes: int = 20) -> str:
    """The report's HTML text."""
    s, c = run.summary, run.config
    title = f"{run.algo} on {run.env}: {Path(os.path.abspath(run.dir)).name}"  # '.' and '..' have no name
    dist = '<p class="note">Skipped (no best or last checkpoint, or --eval-episodes 0).</p>'
    if eval_episodes and _has_best_or_last(run.dir):  # periodic step-N ones alone: find_checkpoint's error ended it
        dist_img, dist_caption = eval_distribution(run, eval_episodes)
        dist = f"<figure>{dist_img}<figcaption>{html.escape(dist_caption)}</figcaption></figure>"
    ckpt_rows = checkpoints(run.dir)
    for r in ckpt_rows:
        r["kib"] = round(r["bytes"] / 1024, 1)
    ckpts = _table(ckpt_rows, [("name", "checkpoint"), ("step", "step"), ("best_eval_return", "best eval return"),
                               ("last_eval_return", "last eval return"), ("kib", "KiB"), ("sha256", "sha256")]) \
        if ckpt_rows else '<p class="note">No checkpoints.</p>'
    note = "" if s else ('<p class="note">No summary.json: the run is still going or was killed; '
                         "the report shows what was saved (its numbers from the saved tables).</p>")
    if s and not current_summary(run):
        note = (f'<p class="note">summary.json is from the stop at step {s["steps"]:,} before the run was resumed: '
                "the run is still going or was killed since; the report shows what was saved (its numbers from the "
                "saved tables).</p>")
    sub = f"seed {c.get('seed')} · {code_version(code_record(run))} · {c.get('n_envs')} envs"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
{GENERATOR}<title>{html.escape(title)}</title><style>{CSS}</style></head>
<body><main>
<h1>{html.escape(title)}</h1><p class="sub">{html.escape(sub)}</p>{note}
{_cards(run)}{policy_section(run, _table)}
<h2>Learning curve</h2>{learning_curve(run)}
{success_curve(run)}
<h2>Evaluation return distribution</h2>{dist}
<h2>Losses and update statistics</h2>{update_stats(run)}
<h2>Throughput</h2>{throughput(run)}
<h2>Checkpoints</h2>{ckpts}
<h2>Videos</h2>{videos(run)}
<h2>Config</h2><pre>{html.escape(yaml.safe_dump(c, sort_keys=False))}</pre>
</main></body></html>
"""


def _has_best_or_last(run_dir: Path) -> bool:
    """Whether the run has the checkpoint the return distribution evaluates (``best``, else ``last``)."""
    from canter.checkpoint import checkpoint_present

    return any(checkpoint_present(run_dir / "checkpoints" / name) for name in ("best", "last"))


def is_report(path: Path) -> bool:
    """Whether the file ``path`` is a report that canter wrote (its head has the generator mark)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return GENERATOR.encode() in head


def check_out(out: str | Path, default: Path) -> Path:
    """The report's path: ``out``, which must end in ``.html`` and may replace an existing file only if
    that is an earlier canter report; ``default`` (``RUN_DIR/report.html``) is always the run's own."""
    path = Path(out)
    if path.is_dir():
        raise CanterError(f"--out '{path}' is a directory; give a file name, e.g. {path / 'report.html'}")
    if not path.suffix and path.name.lower() == ".html":  # a hidden file's name, no suffix: not 'e.g. .html.html'
        raise CanterError(f"--out '{path}' has no file name before '{path.name}'; give one, e.g. "
                          f"{path.with_name('report' + path.name)}")
    if path.suffix.lower() != ".html":
        # a hidden name without a suffix ('.htm') or a trailing dot: not 'e.g. .htm.html', 'notes..html'
        stem = path.name.rstrip(".")
        example = (path.with_name("report.html") if not stem or (stem.startswith(".") and "." not in stem[1:])
                   else path.with_name(stem).with_suffix(".html"))
        raise CanterError(f"--out '{path}' must be an .html file, e.g. {example}")
    if path.exists() and path.resolve() != default.resolve() and not is_report(path):
        raise CanterError(f"--out '{path}' exists and is not a canter report; it is not overwritten: remove it "
                          "or choose another file")
    return path


def write_report(run_dir: str | Path, out: str | Path | None = None, eval_episodes: int = 20) -> Path:
    """Write the report of ``run_dir`` and return its path.

    The default ``out`` is ``RUN_DIR/report.html``. Another ``out`` must end in ``.html`` and, if it
    exists, be an earlier canter report (anything else, such as a run's ``config.yaml`` or a page of
    one's own, is refused with a CanterError before anything is written), and so is an ``eval_episodes``
    that is not a whole number >= 0.
    """
    if isinstance(eval_episodes, bool) or not isinstance(eval_episodes, Integral) or eval_episodes < 0:
        raise CanterError(f"--eval-episodes must be a whole number >= 0, got {eval_episodes!r}")
    run = load_run(run_dir)
    default = run.dir / "report.html"
    path = check_out(default if out is None else out, default)
    atomic_write(path, render(run, eval_episodes).encode())
    return path
