"""The results of ``canter benchmark``: the table's rows (statistics across seeds), as markdown and CSV, and the
figure of learning curves."""
from __future__ import annotations

import csv
import io
import math
import os
import time
from pathlib import Path
from typing import Any

from canter.tools.bench_spec import Cell
from canter.tools.plot import CURVE_TABLES
from canter.tools.rundata import RunData, load_run
from canter.tools.stats import summarize

#: the start of every results.md that :func:`to_markdown` writes
RESULTS_HEAD = "# Benchmark: "
#: the files a benchmark writes into its output directory (each replaced by the next run of it)
RESULT_FILES = ("results.md", "results.csv", "benchmark.png")


def _mean(values: list[float]) -> float:
    return float(sum(values) / len(values)) if values else float("nan")


def table_rows(cells: list[Cell], runs_dir: Path) -> list[dict[str, Any]]:
    """One row per (algorithm, env): statistics across its seeds."""
    groups: dict[tuple[str, str], list[RunData]] = {}
    for cell in cells:
        groups.setdefault((cell.algo, cell.env), []).append(load_run(runs_dir / cell.name, CURVE_TABLES))
    rows = []
    for (algo, env), runs in groups.items():
        finals = [r.final_return() for r in runs]
        stats = summarize([f for f in finals if f is not None])
        steps = [float(r.summary.get("steps", 0)) for r in runs]
        walls = [float(r.summary.get("wall_seconds", 0.0)) for r in runs]
        rows.append({
            # scored: the runs with a final return, which the statistics are over (not one that never evaluated)
            "algo": algo, "env": env, "seeds": len(runs), "scored": sum(f is not None for f in finals),
            **{f"final_{k}": v for k, v in stats.items()},
            "solved": sum(bool(r.summary.get("solved")) for r in runs), "target_reward": runs[0].target_reward,
            "steps": _mean(steps), "wall_seconds": _mean(walls),
            "steps_per_second": sum(steps) / sum(walls) if sum(walls) > 0 else float("nan"),
        })
    return rows


def _fmt(x: Any, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{round(x, digits) + 0.0:,.{digits}f}"  # + 0.0 turns -0.0 into 0.0


#: the return columns of a results row
RETURN_KEYS = ("final_median", "final_q25", "final_q75", "final_iqm", "final_iqm_low", "final_iqm_high")


def _return_fmt(row: dict[str, Any]) -> Any:
    """How the returns of ``row`` are shown: one decimal, or, where every return and the target is below 10 in size
    (success rates, FrozenLake's 0/1 episodes), up to three (0.755, 0.8), which one decimal would blur."""
    values = [row.get(k) for k in (*RETURN_KEYS, "target_reward")]
    small = all(v is None or not math.isfinite(v) or abs(v) < 10 for v in values)
    return _short if small else _fmt


def _short(x: Any) -> str:
    """``x`` with up to three decimals, trailing zeros dropped (0.755, 0.8, 0)."""
    text = _fmt(x, 3)
    return text.rstrip("0").rstrip(".") if "." in text else text


def _seeds_cell(row: dict[str, Any]) -> str:
    """The seeds cell: their count, and how many have a final return where that is fewer (the statistics' n)."""
    scored = row.get("scored", row["seeds"])
    return str(row["seeds"]) if scored == row["seeds"] else f"{row['seeds']} ({scored} with a final return)"


def _target(x: Any) -> str:
    """The target reward as it was set: 475, 0.75, -0.4 (a whole number without decimals, as before)."""
    if x is None or (isinstance(x, float) and math.isnan(x)) or float(x).is_integer():
        return _fmt(x, 0)
    return f"{x:,.6g}"


def to_markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The results table in markdown, with how it was produced."""
    from canter.utils import canter_version, git_commit

    lines = [
        f"{RESULTS_HEAD}{meta['file']}", "",
        f"canter {canter_version()} ({git_commit() or 'no git'}), {os.cpu_count()} CPUs, --jobs {meta['jobs']}, "
        f"{time.strftime('%Y-%m-%d %H:%M')}, {meta['seconds']} s for the runs not reused.", "",
        "Final return = last evaluation's mean return of a run. IQM = interquartile mean across seeds; "
        "CI = 95% percentile bootstrap over seeds (as rliable).", "",
        "| algo | env | seeds | final return median [q25, q75] | IQM [95% CI] | solved | target | steps | wall s | steps/s |",
        "|---|---|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ret = _return_fmt(r)
        lines.append(
            f"| {r['algo']} | {r['env']} | {_seeds_cell(r)} | {ret(r['final_median'])} [{ret(r['final_q25'])}, "
            f"{ret(r['final_q75'])}] | {ret(r['final_iqm'])} [{ret(r['final_iqm_low'])}, {ret(r['final_iqm_high'])}] "
            f"| {r['solved']}/{r['seeds']} | {_target(r['target_reward'])} | {_fmt(r['steps'], 0)} "
            f"| {_fmt(r['wall_seconds'])} | {_fmt(r['steps_per_second'], 0)} |")
    return "\n".join(lines) + "\n"


def to_csv(rows: list[dict[str, Any]]) -> str:
    """The results table as CSV (one row per algorithm and env, all numeric columns)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["algo", "env"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def save_figure(runs: list[RunData], path: Path) -> Path:
    """Learning curves, one panel per env, one mean-and-band curve per algorithm (a run of several policies: one per
    policy, ``"ALGO / POLICY"``, as ``canter plot`` draws it), each label in one colour across the panels."""
    from canter.tools.plot import draw_groups, group_runs, new_figure, save_figure_atomic
    from canter.tools.plot_policies import run_policies, split_policies

    envs = list(dict.fromkeys(r.env for r in runs))
    labels = [label for r in runs for label in ([f"{r.algo} / {p}" for p in run_policies(r)] or [r.algo])]
    colors = {label: f"C{i % 10}" for i, label in enumerate(dict.fromkeys(labels))}
    cols = min(3, len(envs))
    nrows = math.ceil(len(envs) / cols)
    fig = new_figure(440 * cols, 340 * nrows)
    for i, env in enumerate(envs):
        ax = fig.add_subplot(nrows, cols, i + 1)
        env_runs = [r for r in runs if r.env == env]
        draw_groups(ax, split_policies(group_runs(env_runs, [r.algo for r in env_runs])), colors=colors)
        ax.set_title(env)
    return save_figure_atomic(fig, path)
