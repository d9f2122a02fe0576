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

The grid is parsed in :mod:`canter.tools.bench_spec`, the results are tabled and drawn in
:mod:`canter.tools.bench_results`; this module runs the grid and manages ``OUT``.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from canter.atomic import atomic_write
from canter.yaml_io import load_yaml
from canter.errors import CanterError
from canter.run_lock import check_free
from canter.tools.bench_results import RESULT_FILES, RESULTS_HEAD, save_figure, table_rows, to_csv, to_markdown
from canter.tools.bench_spec import MAX_SEEDS, Cell, check_cells, load_spec  # noqa: F401 (the benchmark's API)
from canter.tools.plot import CURVE_TABLES
from canter.tools.rundata import load_run, read_json_mapping


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


#: what a benchmark's ``OUT`` holds: its results files and the folder of its runs
OUT_ENTRIES = (*RESULT_FILES, "runs")


def check_out_folder(out_dir: Path) -> None:
    """Refuse (CanterError) an existing ``out_dir`` that is not empty and not an earlier benchmark's ``OUT``
    (anything but :data:`OUT_ENTRIES` in it, or a ``runs`` that is not a folder): a canter run directory
    (``--out runs/ppo-...``) or a tune output got ``results.*`` and ``runs/`` written into it. The temp file a
    killed write of a results file leaves (``.results.md.<random>.tmp``) is an earlier benchmark's too."""
    from canter.atomic import temp_file_target

    if not out_dir.is_dir():
        return
    if (out_dir / "config.yaml").is_file():
        raise CanterError(f"--out '{out_dir}' is a canter run directory (it holds config.yaml); a benchmark writes its "
                          "results and runs/ into OUT: choose a new or empty folder, or an earlier benchmark's OUT")
    others = sorted(p.name for p in out_dir.iterdir()
                    if p.name not in OUT_ENTRIES and temp_file_target(p.name) not in RESULT_FILES)
    if not others and (out_dir / "runs").exists() and not (out_dir / "runs").is_dir():
        others = ["runs (a file)"]
    if others:
        raise CanterError(f"--out '{out_dir}' is not empty and not an earlier benchmark's OUT (it holds '{others[0]}'"
                          f"{f' and {len(others) - 1} more' if len(others) > 1 else ''}); choose a new or empty folder")


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
    check_out_folder(out_dir)
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
