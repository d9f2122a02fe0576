"""How long the tools that read run data take on a long run: ``canter report``, ``canter plot`` and the
``canter benchmark`` results of one run directory.

A big run directory is made from a small real one (``canter benchmark`` of PPO on CartPole-v1: config,
summary, checkpoints), its three tables replaced by ones of the same schemas as
``canter.logging.history`` writes, with as many rows as asked (defaults: 200k episodes, 1M update
rows with PPO's statistics, 500 evaluations). Each tool (``canter report``, ``plot``, and ``benchmark``
reusing the finished run to write its results) runs in its own fresh ``python -m canter`` process, three
times; the median wall and CPU times are printed.

```bash
python benchmarks/bench_rundata.py                        # defaults, in a temporary directory
python benchmarks/bench_rundata.py --keep /tmp/big         # keep the run (/tmp/big/bench/runs/...) to profile it
PYTHONPATH=../other-checkout python benchmarks/bench_rundata.py --keep /tmp/big --reuse   # the same run, other code
```
"""
from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from _common import BenchParser, one_line_errors, positive_int

#: the statistics a PPO run logs per update (``updates.parquet`` after step, wall_time, steps_per_second)
PPO_STATS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "explained_variance",
             "learning_rate", "clip_range")


def write_tables(run_dir: Path, episodes: int, updates: int, evaluations: int, steps: int, seed: int = 0,
                 agents: tuple[str, ...] = ()) -> None:
    """Write ``history``, ``updates`` and ``evaluations.parquet`` into ``run_dir`` with these row counts,
    spread over ``steps`` env steps, in the schemas canter writes (``agents``: a multi-agent run's labels)."""
    rng = np.random.default_rng(seed)
    f64, i64 = pa.float64(), pa.int64()

    def steps_of(n: int) -> np.ndarray:
        return np.sort(rng.integers(1, steps + 1, n)).astype(np.int64)

    def clock(step: np.ndarray) -> np.ndarray:
        return step / steps * 3600.0

    step = steps_of(episodes)
    ret = np.clip(np.cumsum(rng.normal(0.002, 1.0, episodes)) + rng.normal(0, 20, episodes), 0, 500)
    rolling = np.convolve(ret, np.ones(100) / 100)[:episodes]
    history = {"step": pa.array(step, i64), "wall_time": pa.array(clock(step), f64),
               "episode_return": pa.array(ret, f64), "episode_length": pa.array(ret.astype(np.int64), i64),
               "rolling_return": pa.array(rolling, f64)}
    if agents:
        history["agent"] = pa.array(np.array(agents)[np.arange(episodes) % len(agents)].tolist(), pa.string())
    pq.write_table(pa.table(history), run_dir / "history.parquet")
    step = np.linspace(steps / updates, steps, updates).astype(np.int64)
    table = {"step": pa.array(step, i64), "wall_time": pa.array(clock(step), f64),
             "steps_per_second": pa.array(rng.normal(3000, 200, updates), f64)}
    table.update({k: pa.array(rng.normal(0, 1, updates), f64) for k in PPO_STATS})
    pq.write_table(pa.table(table), run_dir / "updates.parquet")
    step = np.linspace(steps / evaluations, steps, evaluations).astype(np.int64)
    pq.write_table(pa.table({"step": pa.array(step, i64), "wall_time": pa.array(clock(step), f64),
                             "mean_return": pa.array(rng.uniform(0, 500, evaluations), f64),
                             "std_return": pa.array(rng.uniform(0, 50, evaluations), f64),
                             "episodes": pa.array(np.full(evaluations, 10), i64)}),
                   run_dir / "evaluations.parquet")


BENCH_FILE = "seeds: [0]\nset: {max_steps: 4096, eval_every: 2048, tensorboard: false}\nalgos: [ppo]\nenvs: [CartPole-v1]\n"


#: the run that :data:`BENCH_FILE` makes, in the work directory
RUN = "bench/runs/ppo-CartPole-v1-seed0"


def make_run(work: Path, episodes: int, updates: int, evaluations: int) -> Path:
    """Train a small real run with ``canter benchmark`` into ``work/bench``, give it big tables, and return it."""
    (work / "bench.yaml").write_text(BENCH_FILE)
    subprocess.run([sys.executable, "-m", "canter", "benchmark", "bench.yaml", "--out", "bench", "--quiet"], check=True,
                   stdout=subprocess.DEVNULL, cwd=work)
    run_dir = work / RUN
    write_tables(run_dir, episodes, updates, evaluations, steps=50_000_000)
    return run_dir


#: each tool's command line (``canter ...``), given the work directory and the run directory
TOOLS = {
    "report": "report {run} --eval-episodes 0",
    "report (20 eval episodes)": "report {run}",
    "plot": "plot {run} --out {work}/curve.png",
    "benchmark (reusing the run)": "benchmark {work}/bench.yaml --out {work}/bench --quiet",
}


def time_tools(work: Path, run_dir: Path, repeats: int = 3,
               tools: list[str] | None = None) -> dict[str, list[tuple[float, float]]]:
    """(wall, CPU) seconds of each tool's ``python -m canter`` process (the code on ``PYTHONPATH``), ``repeats``
    times; CPU time (user + system) moves less than wall time on a host that others share."""
    times: dict[str, list[tuple[float, float]]] = {}
    for name in tools or list(TOOLS):
        for _ in range(repeats):
            start, cpu = time.perf_counter(), _children_cpu()
            subprocess.run([sys.executable, "-m", "canter", *TOOLS[name].format(work=work, run=run_dir).split()],
                           check=True, stdout=subprocess.DEVNULL, cwd=work)  # not here: -m puts the cwd first
            times.setdefault(name, []).append((time.perf_counter() - start, _children_cpu() - cpu))
    return times


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """Make the run directory, time each tool three times, print the medians."""
    p = BenchParser(description=__doc__.split("\n")[0])
    p.add_argument("--episodes", type=positive_int, default=200_000)
    p.add_argument("--updates", type=positive_int, default=1_000_000)
    p.add_argument("--evaluations", type=positive_int, default=500)
    p.add_argument("--repeats", type=positive_int, default=3)
    p.add_argument("--keep", help="work in this directory and keep it (the run: DIR/bench/runs/ppo-CartPole-v1-seed0)")
    p.add_argument("--reuse", action="store_true", help="time the run already in --keep DIR (another checkout's "
                   "code on PYTHONPATH, say) instead of making one")
    p.add_argument("--tools", nargs="+", choices=list(TOOLS), help="time only these")
    args = p.parse_args(argv)
    if args.reuse and not args.keep:
        p.error("--reuse needs --keep DIR")
    if args.reuse and not (Path(args.keep) / RUN / "summary.json").exists():
        p.error(f"--reuse: no finished run in {Path(args.keep) / RUN}; make one first with --keep {args.keep} "
                "(without --reuse)")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        run_dir = (work / RUN if args.reuse else make_run(work, args.episodes, args.updates, args.evaluations))
        for name, times in time_tools(work, run_dir, args.repeats, args.tools).items():
            wall, cpu = (statistics.median(t[i] for t in times) for i in (0, 1))
            print(f"{name}: median {wall:.2f} s wall ({', '.join(f'{t[0]:.2f}' for t in times)}), {cpu:.2f} s CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
