"""How long the tools that read run data take on a long run: ``canter report``, ``canter plot`` and the
``canter benchmark`` results of one run directory.

A big run directory is made from a small real one (``canter train ppo --env CartPole-v1``: config,
summary, checkpoints), its three tables replaced by ones of the same schemas as
``canter.logging.history`` writes, with as many rows as asked (defaults: 200k episodes, 1M update
rows with PPO's statistics, 500 evaluations). Each tool runs in its own fresh ``python`` process,
three times; the median wall time is printed.

```bash
python benchmarks/bench_rundata.py                        # defaults, in a temporary directory
python benchmarks/bench_rundata.py --keep /tmp/big-run    # keep the run directory to profile it
```
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

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


def make_run(run_dir: Path, episodes: int, updates: int, evaluations: int) -> Path:
    """Train a small real run into ``run_dir``, then give it big tables."""
    subprocess.run([sys.executable, "-m", "canter", "train", "ppo", "--env", "CartPole-v1", "--max-steps", "4096",
                    "--eval-every", "2048", "--set", "tensorboard=false", "--quiet", "--run-dir", str(run_dir)],
                   check=True)
    write_tables(run_dir, episodes, updates, evaluations, steps=50_000_000)
    return run_dir


TOOLS = {
    "report": "from canter.tools.report import write_report; write_report({d!r}, eval_episodes=0)",
    "report (20 eval episodes)": "from canter.tools.report import write_report; write_report({d!r})",
    "plot": "from canter.tools.plot import plot_runs; plot_runs([{d!r}], out={d!r} + '/curve.png')",
    "benchmark results": ("from pathlib import Path; from canter.tools.benchmark import save_figure; "
                          "from canter.tools.rundata import load_run; r = load_run({d!r}); r.final_return(); "
                          "save_figure([r], Path({d!r}) / 'bench.png')"),
}


def main() -> None:
    """Make the run directory, time each tool three times, print the medians."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--episodes", type=int, default=200_000)
    p.add_argument("--updates", type=int, default=1_000_000)
    p.add_argument("--evaluations", type=int, default=500)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--keep", help="make the run directory here and keep it")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = make_run(Path(args.keep or Path(tmp) / "run"), args.episodes, args.updates, args.evaluations)
        for name, code in TOOLS.items():
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                subprocess.run([sys.executable, "-c", code.format(d=str(run_dir))], check=True)
                times.append(time.perf_counter() - start)
            print(f"{name}: median {statistics.median(times):.2f} s ({', '.join(f'{t:.2f}' for t in times)})",
                  flush=True)


if __name__ == "__main__":
    main()
