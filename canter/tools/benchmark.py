"""``canter benchmark FILE.yaml``: a grid of algorithms x environments x seeds, a table and a figure.

The benchmark file::

    seeds: 3                       # or a list: [0, 1, 2] (whole numbers; 1e1 is 10, as in a config file; <= 1000)
    set: {eval_episodes: 10}       # overrides for every run (run keys or hyperparameters)
    envs: [CartPole-v1]            # the env list of algorithms that do not name their own
    algos:                         # a list of names, or a mapping name -> options
      ppo:
        envs: [CartPole-v1, {Acrobot-v1: {max_steps: 200000}}]   # an env may carry overrides
        set: {n_envs: 8}
      dqn: {}

Precedence: shipped preset < ``set`` < the algorithm's ``set`` < the env's overrides. Every
combination is validated (config, env id, action space) before the first run. Runs go to
``OUT/runs/ALGO-ENV-seedN``; a run that finished before is reused, so an interrupted benchmark
continues where it stopped. Results: ``results.md`` and ``results.csv`` (final return median and
IQR, IQM with a 95% stratified-bootstrap CI across seeds as in rliable, solved count, steps, wall
time, steps/s) and ``benchmark.png`` (learning curves, one panel per env).
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from canter.checkpoint import atomic_write
from canter.config import coerce, load_yaml, resolve_config, resolved_dict
from canter.errors import CanterError, unknown
from canter.run_lock import check_free
from canter.tools.plot import CURVE_TABLES
from canter.tools.rundata import RunData, load_run, read_json_mapping
from canter.tools.stats import summarize

SPEC_KEYS = ("seeds", "set", "envs", "algos")
#: the most seeds (runs per algorithm and env) a benchmark file may ask for: a count such as 1e9 would build a
#: grid of a billion cells before the first run (and 1e300 overflow)
MAX_SEEDS = 1000
ALGO_KEYS = ("envs", "set")


@dataclass(frozen=True)
class Cell:
    """One run of the grid."""

    algo: str
    env: str
    seed: int
    overrides: dict[str, Any]

    @property
    def name(self) -> str:
        """Run directory name."""
        return f"{self.algo}-{self.env.replace('/', '-').replace(':', '-')}-seed{self.seed}"


def _overrides(data: Any, where: str) -> dict[str, Any]:
    """A ``set`` mapping as make_trainer keyword arguments (``hparams.lr`` / ``hparams: {lr: }`` -> ``lr``)."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CanterError(f"{where} must be a mapping of config keys to values, got {data!r}")
    out: dict[str, Any] = {}
    given: dict[str, str] = {}  # name -> the key that set it ('lr', 'hparams.lr', 'hparams: {lr: }')

    def put(name: str, value: Any, spelled: str) -> None:
        if name in given:  # 'lr' and 'hparams: {lr: }' in one mapping: one of them would be dropped without a word
            raise CanterError(f"{where}: '{given[name]}' and '{spelled}' both set '{name}'; give it once")
        given[name] = spelled
        out[name] = value

    for key, value in data.items():
        key = str(key)
        if key in ("algo", "env"):  # the grid's own: given twice to resolve_config, a TypeError traceback
            raise CanterError(f"{where}: '{key}' cannot be set here; the grid takes it from "
                              f"{'algos' if key == 'algo' else 'envs'}")
        if key == "hparams":
            if value is not None and not isinstance(value, dict):
                raise CanterError(f"{where}: 'hparams' must be a mapping of hyperparameter names to values, "
                                  f"got {value!r}")
            for k, v in (value or {}).items():
                put(str(k), v, f"hparams: {{{k}: ...}}")
        else:
            put(key[8:] if key.startswith("hparams.") else key, value, key)
    return out


def _env_entries(envs: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(envs, (str, dict)):
        envs = [envs]
    if not isinstance(envs, list) or not envs:
        raise CanterError(f"{where} must be a non-empty list of env ids")
    out = []
    for item in envs:
        if isinstance(item, str):
            out.append((item, {}))
        elif isinstance(item, dict):
            out.extend((str(k), _overrides(v, f"{where}: {k}")) for k, v in item.items())
        else:
            raise CanterError(f"{where}: expected an env id or 'ENV: {{overrides}}', got {item!r}")
    return out


def _seeds(value: Any, path: str | Path) -> list[int]:
    """The seeds of a benchmark file's ``seeds`` (a count, or a list of seeds). Each number is read as a config
    file's integers are (:func:`~canter.config.coerce`): a whole number in exponent form (``1e1``) is one,
    ``1.5`` is refused; more than :data:`MAX_SEEDS` seeds are refused."""
    bad = CanterError(f"{path}: 'seeds' must be a count >= 1 or a list of seeds >= 0, got {value!r}")

    def whole(number: Any) -> int:
        try:
            return coerce(int, number, "seeds")
        except CanterError:
            raise bad from None

    count = len(value) if isinstance(value, list) else whole(value)
    if count > MAX_SEEDS:  # before any list is built: range(1e300) overflows, range(1e9) fills the memory
        shown = (f"a list of {count} seeds" if isinstance(value, list) else
                 f"{value:g}" if isinstance(value, float) else repr(value))  # YAML's 1e9: 1e+09, not 1000000000.0
        raise CanterError(f"{path}: 'seeds' must be at most {MAX_SEEDS} seeds (runs per algorithm and env), "
                          f"got {shown}")
    if isinstance(value, list):
        seeds = [whole(s) for s in value]
        if seeds and min(seeds) >= 0:
            return seeds
    elif count >= 1:
        return list(range(count))
    raise bad


def load_spec(path: str | Path) -> list[Cell]:
    """Parse and validate a benchmark file into its grid of cells (nothing is run or written)."""
    data = load_yaml(path)
    for key in data:
        if key not in SPEC_KEYS:
            raise unknown(f"key in {path}", str(key), SPEC_KEYS)
    seeds = _seeds(data.get("seeds", 3), path)
    common = _overrides(data.get("set"), f"{path}: set")
    algos = data.get("algos")
    if isinstance(algos, list):
        algos = {str(a): {} for a in algos}
    if not isinstance(algos, dict) or not algos:
        raise CanterError(f"{path}: 'algos' must list at least one algorithm")
    cells = []
    for algo, opts in algos.items():
        opts = opts or {}
        if not isinstance(opts, dict):
            raise CanterError(f"{path}: options of '{algo}' must be a mapping with 'envs' and/or 'set'")
        for key in opts:
            if key not in ALGO_KEYS:
                raise unknown(f"key under algos.{algo} in {path}", str(key), ALGO_KEYS)
        if "envs" not in opts and "envs" not in data:
            raise CanterError(f"{path}: no envs for '{algo}'; add a top-level 'envs' list or algos.{algo}.envs")
        algo_over = _overrides(opts.get("set"), f"{path}: algos.{algo}.set")
        for env, env_over in _env_entries(opts.get("envs", data.get("envs")), f"{path}: envs of '{algo}'"):
            overrides = {**common, **algo_over, **env_over}
            if "seed" in overrides:
                raise CanterError(f"{path}: set the seeds with the top-level 'seeds', not 'seed' ({algo} on {env})")
            cells.extend(Cell(algo, env, seed, overrides) for seed in seeds)
    names = [c.name for c in cells]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise CanterError(f"{path}: the run '{dup}' appears twice in the grid")
    return cells


def check_cells(cells: list[Cell]) -> dict[str, dict[str, Any]]:
    """Resolve every cell's config and check the algorithm can act in its env (CanterError if not).

    Returns each cell's resolved config (as in ``config.yaml``) by run name.
    """
    from canter.tools.checks import check_algo_env

    checked: set[tuple[str, str]] = set()
    configs = {}
    for cell in cells:
        run, algo_cfg = resolve_config(cell.algo, cell.env, seed=cell.seed, **cell.overrides)
        configs[cell.name] = resolved_dict(run, algo_cfg)
        if (cell.algo, cell.env) not in checked:
            checked.add((cell.algo, cell.env))
            check_algo_env(run.algo, run.env, run.env_kwargs, run.policies, run.central_state)
    return configs


def _same_config(run_dir: Path, expected: dict[str, Any]) -> None:
    """Refuse to reuse a finished run whose config differs from what the benchmark file now asks for."""
    found = load_yaml(run_dir / "config.yaml")  # damaged: a CanterError naming the file, not a traceback
    for key in sorted(set(found) | set(expected)):
        if key == "torch_threads":  # --jobs sets it; it does not change what is measured
            continue
        if key == "hparams":
            have = found.get(key) if isinstance(found.get(key), dict) else {}
            diff = [k for k in sorted(set(have) | set(expected[key])) if have.get(k) != expected[key].get(k)]
            key = f"hparams.{diff[0]}" if diff else None
        elif found.get(key) == expected.get(key):
            key = None
        if key is not None:
            raise CanterError(f"{run_dir} was run with a different '{key}' than the benchmark file now sets; "
                              "use another --out or delete that run directory")


#: the start of every results.md that :func:`to_markdown` writes
RESULTS_HEAD = "# Benchmark: "
#: the files a benchmark writes into its output directory (each replaced by the next run of it)
RESULT_FILES = ("results.md", "results.csv", "benchmark.png")


def check_out(out_dir: Path) -> None:
    """Refuse (CanterError) an ``out_dir`` that is a file, or that holds a results file no benchmark wrote: a
    ``results.md`` that does not start as :func:`to_markdown`'s, or a ``results.csv`` or ``benchmark.png`` without
    one that does (``--out .`` in a project of one's own would overwrite them)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise CanterError(f"--out '{out_dir}' is a file, not a directory")
    present = [name for name in RESULT_FILES if (out_dir / name).exists()]
    if not present:
        return
    try:
        with open(out_dir / "results.md", "rb") as f:
            ours = f.read(len(RESULTS_HEAD)) == RESULTS_HEAD.encode()
    except OSError:  # missing, or not a file
        ours = False
    if not ours:
        raise CanterError(f"--out '{out_dir}' holds {present[0]}, which canter benchmark did not write; choose another "
                          "--out (this would overwrite it)")


def _check_deletable(run_dir: Path) -> None:
    """Refuse (CanterError) to delete, for a fresh start of its run, a ``run_dir`` that is not an unfinished canter run
    directory (a file, or a folder of one's own named as a run of the grid, without ``config.yaml``)."""
    if run_dir.is_dir() and ((run_dir / "config.yaml").exists() or not any(run_dir.iterdir())):
        return
    raise CanterError(f"'{run_dir}' is not a canter run directory (no config.yaml), and the benchmark would delete it "
                      "to run it again; move it or choose another --out")


def _finished(run_dir: Path) -> bool:
    """Whether the run finished (not interrupted); a damaged summary.json is refused in one line naming it
    (it was a traceback for a non-object or non-UTF-8 file, and a rerun, deleting the run, for bad JSON)."""
    path = run_dir / "summary.json"
    if not path.exists():
        return False
    return read_json_mapping(path).get("stop_reason") not in (None, "interrupted")


def run_cell(cell: Cell, run_dir: str, threads: int | None) -> dict[str, Any]:
    """Train one cell into ``run_dir`` (top level so that worker processes can run it). A run that the
    divergence guard stops is a result (its summary says ``diverged``), as a rerun of the benchmark reuses it."""
    from canter.api import train
    from canter.trainers.guard import TrainingDiverged

    extra = {"torch_threads": threads} if threads else {}
    try:
        train(cell.algo, cell.env, run_dir=run_dir, quiet=True, seed=cell.seed, **{**cell.overrides, **extra})
    except TrainingDiverged as exc:
        summary = json.loads((Path(run_dir) / "summary.json").read_text())
        return {**summary, "diverged": str(exc)}
    return json.loads((Path(run_dir) / "summary.json").read_text())


@dataclass
class BenchmarkResult:
    """Rows of the results table, its markdown text and the files written."""

    rows: list[dict[str, Any]]
    markdown: str
    files: dict[str, Path] = field(default_factory=dict)


def benchmark(path: str | Path, out: str | Path | None = None, jobs: int = 1, quiet: bool = False) -> BenchmarkResult:
    """Run (or continue) the benchmark in ``path``; write the table, CSV and figure to ``out``.

    ``jobs`` > 1 runs that many runs at once in worker processes, each with one torch thread.
    """
    if jobs < 1:
        raise CanterError(f"--jobs must be >= 1, got {jobs}")
    cells = load_spec(path)
    configs = check_cells(cells)
    out_dir = Path(out) if out is not None else Path("runs") / f"benchmark-{Path(path).stem}"
    check_out(out_dir)
    runs_dir = out_dir / "runs"
    todo = []
    for cell in cells:
        run_dir = runs_dir / cell.name
        if _finished(run_dir):
            _same_config(run_dir, configs[cell.name])
            continue
        if run_dir.exists():
            check_free(run_dir)  # another benchmark on this --out is training it: nothing is deleted
            _check_deletable(run_dir)
        todo.append(cell)
    for cell in todo:
        if (runs_dir / cell.name).exists():  # left by an interrupted benchmark: start that run again
            shutil.rmtree(runs_dir / cell.name)
    runs_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    _execute(todo, runs_dir, jobs, quiet, len(cells) - len(todo), len(cells))
    rows = table_rows(cells, runs_dir)
    meta = {"file": str(path), "jobs": jobs, "seconds": round(time.perf_counter() - started, 1)}
    markdown = to_markdown(rows, meta)
    files = {"markdown": out_dir / "results.md", "csv": out_dir / "results.csv", "figure": out_dir / "benchmark.png"}
    atomic_write(files["markdown"], markdown.encode())
    atomic_write(files["csv"], to_csv(rows).encode())
    save_figure([load_run(runs_dir / c.name, CURVE_TABLES) for c in cells], files["figure"])
    return BenchmarkResult(rows, markdown, files)


def _execute(todo: list[Cell], runs_dir: Path, jobs: int, quiet: bool, done: int, total: int) -> None:
    def report(cell: Cell, summary: dict[str, Any]) -> None:
        """Print one progress line per finished run; a run stopped by Ctrl-C (SIGINT/SIGTERM, which
        the run catches to save itself) stops the benchmark."""
        nonlocal done
        if summary.get("stop_reason") == "interrupted":
            print(f"{cell.algo} {cell.env} seed {cell.seed}: interrupted at {summary.get('steps', 0):,} steps",
                  flush=True)
            raise KeyboardInterrupt
        done += 1
        if not quiet:
            last = summary.get("last_eval_return")
            ret = "n/a" if last is None else f"{last:.2f}"
            diverged = f" ({summary['diverged']})" if summary.get("diverged") else ""
            print(f"[{done}/{total}] {cell.algo} {cell.env} seed {cell.seed}: final eval return {ret}, "
                  f"{summary.get('steps', 0):,} steps, {summary.get('wall_seconds', 0):.1f}s{diverged}", flush=True)

    if jobs == 1 or len(todo) <= 1:
        for cell in todo:
            report(cell, run_cell(cell, str(runs_dir / cell.name), None))
        return
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    env = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    os.environ.update({"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})  # inherited by the spawned workers
    try:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn")) as pool:
            # at most `jobs` runs are submitted at a time: the pool hands a submitted run to the next free
            # worker even after cancel(), so on Ctrl-C nothing but the running ones (which save
            # 'interrupted') may be in it
            pending, running = list(todo), {}
            while pending or running:
                while pending and len(running) < jobs:
                    cell = pending.pop(0)
                    running[pool.submit(run_cell, cell, str(runs_dir / cell.name), 1)] = cell
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    report(running.pop(fut), fut.result())
    finally:
        for k, v in env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


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
    """Learning curves, one panel per env, one mean-and-band curve per algorithm."""
    from canter.tools.plot import draw_groups, group_runs, new_figure, save_figure_atomic

    envs = list(dict.fromkeys(r.env for r in runs))
    colors = {algo: f"C{i % 10}" for i, algo in enumerate(dict.fromkeys(r.algo for r in runs))}
    cols = min(3, len(envs))
    nrows = math.ceil(len(envs) / cols)
    fig = new_figure(440 * cols, 340 * nrows)
    for i, env in enumerate(envs):
        ax = fig.add_subplot(nrows, cols, i + 1)
        env_runs = [r for r in runs if r.env == env]
        draw_groups(ax, group_runs(env_runs, [r.algo for r in env_runs]), colors=colors)
        ax.set_title(env)
    return save_figure_atomic(fig, path)
