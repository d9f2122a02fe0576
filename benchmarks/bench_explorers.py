"""Explorer scaling on Ray: env-steps/s with 1, 2, 4, 8 explorers on an env whose step waits on I/O.

The env is CartPole-v1 behind a wrapper that sleeps ``--sleep-ms`` per step (a stand-in for a slow
simulator), so explorers overlap their waiting even on a 2-core machine. Each measurement is a
fresh ``python`` subprocess that starts its own local Ray, trains for ``--seconds`` after a
warm-up, and prints one JSON line; the parent appends it to ``--jsonl``. ``--report`` turns the
JSON lines into a markdown section and writes it into ``--out`` between marker comments
(the rest of the file is kept)::

    python benchmarks/bench_explorers.py --explorers 1 2 4 --jsonl benchmarks/results_explorers.jsonl
    python benchmarks/bench_explorers.py --explorers 8 --jsonl benchmarks/results_explorers.jsonl
    python benchmarks/bench_explorers.py --report benchmarks/results_explorers.jsonl --out benchmarks/RESULTS.md

Measured per run (after the warm-up, over the measuring window): env steps/s, learner updates/s,
the learner's time in ``learn`` and waiting for rollouts, weights and trajectory bytes/s, policy
lag, and each explorer's own collection speed.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym

from _common import (BenchParser, append_jsonl, check_appendable, input_error, one_line_errors, positive_int,
                     positive_seconds, read_jsonl, replace_section, seconds_float)
from _report import cpu_model

HERE = Path(__file__).resolve().parent
ENV_ID = "bench_explorers:SleepyCartPole-v0"
START, END = "<!-- bench_explorers:start -->", "<!-- bench_explorers:end -->"
#: what a results line of this script has (a line without them is refused: another file's)
EXPLORER_KEYS = ("algo", "explorers", "sleep_ms", "n_envs", "n_steps", "env_steps_per_s", "date")
#: the algorithm families measured here: explorers on Ray collecting rollouts of ``--n-steps`` (off-policy algorithms
#: run on explorers too, but with no ``n_steps``)
EXPLORER_FAMILIES = ("on_policy", "async")


class SleepyCartPole(gym.Wrapper):
    """CartPole-v1 whose ``step`` first sleeps ``sleep_ms`` (I/O-bound simulator stand-in)."""

    def __init__(self, sleep_ms: float = 2.0, **kwargs: Any) -> None:
        super().__init__(gym.make("CartPole-v1", **kwargs))
        self.sleep = sleep_ms / 1000.0

    def step(self, action: Any) -> Any:  # noqa: D102
        time.sleep(self.sleep)
        return self.env.step(action)


if "SleepyCartPole-v0" not in gym.registry:
    gym.register("SleepyCartPole-v0", entry_point=SleepyCartPole, disable_env_checker=True)


# ------------------------------------------------------------------------------------------- worker
def _settings(args: argparse.Namespace, explorers: int) -> dict[str, Any]:
    """The run settings of a measurement with ``explorers`` explorers (the parent resolves them before any worker)."""
    return dict(explorers=explorers, n_envs=args.n_envs, n_steps=args.n_steps, seed=0, max_steps=10**9, eval_every=0,
                target_reward=None, env_kwargs={"sleep_ms": args.sleep_ms}, vectorization="sync")


def check_algorithm(args: argparse.Namespace) -> None:
    """A one-line error (exit 2), before any worker starts, for an ``--algo`` that the workers' runs would refuse:
    unknown, without rollouts of ``--n-steps`` (dqn, sac: 'unknown config key n_steps'), or not run on explorers."""
    from canter.config import resolve_config
    from canter.errors import CanterError
    from canter.registry import lookup, names

    def resolve(algo: str) -> None:
        resolve_config(algo, ENV_ID, None, [], from_python=True, **_settings(args, max(args.explorers)))

    resolve(args.algo)
    family = lookup("algorithm", args.algo).family
    if family not in EXPLORER_FAMILIES:  # canter.distributed.make_distributed_trainer refuses it in each worker
        runnable = []
        for name in names("algorithm"):
            try:
                if lookup("algorithm", name).family in EXPLORER_FAMILIES and resolve(name) is None:
                    runnable.append(name)
            except CanterError:  # (mappo: multi-agent envs only)
                pass
        input_error(f"--algo {args.algo} ({family}) does not run on explorers with rollouts of --n-steps; "
                    f"one of: {', '.join(runnable)}")


def worker(args: argparse.Namespace) -> dict[str, Any]:
    """One measurement in this process: build, warm up, measure, print JSON."""
    import canter

    t0 = time.perf_counter()
    trainer = canter.make_trainer(args.algo, ENV_ID, **_settings(args, args.explorers))
    build_s = time.perf_counter() - t0
    timers = {"learn": 0.0, "wait": 0.0}

    def timed(name: str, fn: Any) -> Any:
        def wrapper(*a: Any, **k: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                timers[name] += time.perf_counter() - start
        return wrapper

    trainer.agent.learn = timed("learn", trainer.agent.learn)
    pool = trainer.pool
    pool.wait = timed("wait", pool.wait)
    pool.gather = timed("wait", pool.gather)
    first: dict[str, Any] | None = None
    rec = None
    try:
        for rec in trainer():
            now = time.perf_counter()
            if first is None and rec.wall_time >= args.warmup:
                first = {"t": now, "step": rec.step, "updates": trainer.algorithm.updates,
                         "version": trainer.version, "losses": dict(rec.losses), **{k: v for k, v in timers.items()},
                         "explorer_steps": trainer._explorer_steps.copy()}
            if first is not None and now - first["t"] >= args.seconds:
                break
    finally:
        trainer.close()
    assert first is not None and rec is not None, "the run ended before the warm-up"
    dt = now - first["t"]
    last = rec.losses
    per_explorer = (trainer._explorer_steps - first["explorer_steps"]) / dt
    return {
        "algo": args.algo, "explorers": args.explorers, "n_envs": args.n_envs, "n_steps": args.n_steps,
        "sleep_ms": args.sleep_ms, "build_s": round(build_s, 2), "seconds": round(dt, 2),
        "env_steps_per_s": round((rec.step - first["step"]) / dt, 1),
        "learner_updates_per_s": round((trainer.version - first["version"]) / dt, 2),
        "gradient_steps_per_s": round((trainer.algorithm.updates - first["updates"]) / dt, 2),
        "learn_fraction": round((timers["learn"] - first["learn"]) / dt, 3),
        "wait_fraction": round((timers["wait"] - first["wait"]) / dt, 3),
        "weights_kb_per_s": round((last["weights_mb"] - first["losses"]["weights_mb"]) * 1024 / dt, 1),
        "trajectory_kb_per_s": round((last["trajectory_mb"] - first["losses"]["trajectory_mb"]) * 1024 / dt, 1),
        "weights_kb": round(sum(a.nbytes for m in _weights(trainer).values() for a in m.values()) / 1024, 1),
        "policy_lag": last["policy_lag"], "explorer_restarts": last["explorer_restarts"],
        "per_explorer_steps_per_s": [round(float(x), 1) for x in per_explorer],
    }


def _weights(trainer: Any) -> dict[str, Any]:
    from canter.distributed.explorer import explorer_weights

    return explorer_weights(trainer.agent)["modules"]


# ------------------------------------------------------------------------------------------- parent
def measure(args: argparse.Namespace) -> None:
    """Run one subprocess per explorer count; append each JSON line to ``--jsonl``."""
    from canter.utils import available_cpus

    check_algorithm(args)  # canter's one-line error here, not each worker's after ~10 s
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")])}

    # the local Ray of each run gets num_cpus=available_cpus() (canter.distributed.cluster.connect)
    machine = {"cpu": cpu_model(), "ray_cpus": available_cpus(), "python": platform.python_version()}
    for n in args.explorers:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--algo", args.algo, "--explorers", str(n),
               "--n-envs", str(args.n_envs), "--n-steps", str(args.n_steps), "--sleep-ms", str(args.sleep_ms),
               "--seconds", str(args.seconds), "--warmup", str(args.warmup)]
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.seconds + args.warmup + 300)
        if proc.returncode != 0:
            sys.exit(f"explorers={n} failed:\n{proc.stderr[-3000:]}")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        result.update(process_s=round(time.perf_counter() - start, 1), date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                      load_after=" ".join(f"{x:.2f}" for x in os.getloadavg()), **machine)
        print(json.dumps(result), flush=True)
        if args.jsonl:
            append_jsonl(args.jsonl, [result])


def report(path: str) -> str:
    """Markdown section from the JSON lines: a table per algorithm and setting (sleep, envs and steps per
    rollout), the latest line of each explorer count in it; speed-up is against its own 1-explorer row."""
    rows: dict[tuple, dict[str, Any]] = {}
    for r in read_jsonl(path, EXPLORER_KEYS):  # in the order measured: a rerun moves its key to the end
        rows.pop(_setting(r) + (r["explorers"],), None)
        rows[_setting(r) + (r["explorers"],)] = r
    if not rows:
        input_error(f"no results in {path}")
    out = [START, "## Explorer scaling on Ray (`bench_explorers.py`)", ""]
    for setting in sorted({k[:-1] for k in rows}):
        group = [rows[k] for k in sorted(rows) if k[:-1] == setting]
        base = next((r for r in group if r["explorers"] == 1), None)
        g = group[0]
        out += [f"### {setting[0].upper()}: CartPole-v1 sleeping {g['sleep_ms']:g} ms per step, {g['n_envs']} envs x "
                f"{g['n_steps']} steps per rollout and explorer", "",
                "| explorers | env-steps/s | speed-up | efficiency | learner updates/s | learner busy | "
                "weights KB/s | trajectories KB/s | policy lag | per explorer steps/s |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for r in group:
            speed = r["env_steps_per_s"] / base["env_steps_per_s"] if base else None  # no 1-explorer run here
            scaled = "n/a | n/a" if speed is None else f"{speed:.2f}x | {speed / r['explorers']:.0%}"
            out.append(
                f"| {r['explorers']} | {r['env_steps_per_s']:,.0f} | {scaled} | "
                f"{r['learner_updates_per_s']:.1f} | {r['learn_fraction']:.0%} | {r['weights_kb_per_s']:,.0f} | "
                f"{r['trajectory_kb_per_s']:,.0f} | {r['policy_lag']:.1f} | "
                f"{min(r['per_explorer_steps_per_s']):,.0f}–{max(r['per_explorer_steps_per_s']):,.0f} |")
        out.append("")
    out += estimate(rows)
    last = list(rows.values())[-1]
    dates = [r["date"] for r in rows.values()]
    out += [
        "Each row: a fresh process with its own local Ray "
        f"({_recorded(rows, 'ray_cpus', '{} CPUs', 'CPUs not recorded')}), "
        f"{_recorded(rows, 'seconds', '{:.0f} s')} measured after a warm-up; weights of "
        f"{last['weights_kb']:.0f} KB per version. Learner busy = share of wall time inside `learn`. "
        f"Raw JSON lines: `benchmarks/results_explorers.jsonl`. Dates {min(dates)} to {max(dates)}; CPU "
        f"{_recorded(rows, 'cpu', '{}')}; Python {_recorded(rows, 'python', '{}')}.",
        "", "Reproduce (each command under ten minutes): `python benchmarks/bench_explorers.py --explorers 1 2 4 "
        "--jsonl benchmarks/results_explorers.jsonl`, then `--explorers 8`, the same with `--algo ppo`, then "
        "`python benchmarks/bench_explorers.py --report benchmarks/results_explorers.jsonl --out benchmarks/RESULTS.md`.",
        "", END,
    ]
    return "\n".join(out)


def _recorded(rows: dict[tuple, dict[str, Any]], key: str, fmt: str, missing: str = "not recorded") -> str:
    """The distinct values of ``key`` that the runs recorded, formatted (``missing`` for older runs)."""
    values = sorted({fmt.format(r[key]) if key in r else missing for r in rows.values()})
    return " / ".join(values)


def _setting(r: dict[str, Any]) -> tuple:
    """What must match for two runs to share a table: algorithm, sleep per step, envs and steps per rollout."""
    return (r["algo"], r["sleep_ms"], r["n_envs"], r["n_steps"])


def estimate(rows: dict[tuple, dict[str, Any]]) -> list[str]:
    """A written projection to 64 and 512 explorers from the largest asynchronous (IMPALA) run of the setting
    measured last."""
    impala = [r for r in rows.values() if r["algo"] == "impala"]
    if not impala:
        return []
    r = max((x for x in impala if _setting(x) == _setting(impala[-1])), key=lambda x: x["explorers"])
    per_explorer = r["env_steps_per_s"] / r["explorers"]
    rollout_steps = r["n_envs"] * r["n_steps"]
    busy = 1.0 - r["wait_fraction"]  # learner time not spent waiting for rollouts
    ms_update = 1000 * busy / r["learner_updates_per_s"]
    ms_learn = 1000 * r["learn_fraction"] / r["learner_updates_per_s"]
    capacity = rollout_steps / (ms_update / 1000)
    traj_kb = r["trajectory_kb_per_s"] / r["env_steps_per_s"] * rollout_steps  # per rollout
    lines = ["### Estimate for a cluster (from the measurements above)", "",
             f"From the {r['explorers']}-explorer IMPALA run: one explorer collects ~{per_explorer:,.0f} env-steps/s "
             f"here; the learner spends {ms_update:.1f} ms per update of one {rollout_steps}-step rollout "
             f"({ms_learn:.1f} ms in `learn`, the rest receiving, converting, `ray.put` of the weights and "
             f"submitting), so one learner process absorbs at most ~{round(capacity, -2):,.0f} env-steps/s. "
             f"A rollout is ~{traj_kb:.0f} KB and a weights version {r['weights_kb']:.0f} KB.", ""]
    for n in (64, 512):
        supply = n * per_explorer
        steps = min(supply, capacity)
        rollouts = steps / rollout_steps
        bound = "explorers (the learner is ~{:.0%} busy)".format(supply / capacity) if supply < capacity \
            else "the learner ({:.0%} of what the explorers could deliver)".format(capacity / supply)
        lines.append(
            f"- **{n} explorers**: ~{round(steps, -2):,.0f} env-steps/s, bound by {bound}; weights out "
            f"~{rollouts * r['weights_kb'] / 1024:,.1f} MB/s (each rollout loads one new version), trajectories "
            f"in ~{rollouts * traj_kb / 1024:,.1f} MB/s; policy lag ~{2 * n - 1} versions, i.e. rollouts "
            f"~{(2 * n - 1) / (rollouts or 1):.1f} s old (lag was 2N-1 in every run above: two calls in flight "
            "per explorer).")
    lines += ["", "So with small MLPs the network is not the limit; the single learner process is. Past ~"
              f"{capacity / per_explorer:,.0f} explorers, more explorers only help if each update takes more data "
              "(several rollouts per batch amortise the per-update Python cost and cut the lag in versions) or the "
              "learner runs on a GPU; at 512 explorers the rollouts would also be too stale for V-trace to use well. "
              "With a large model (e.g. a 7 MB CNN) the weights traffic (N x rollouts/s x model size) becomes "
              "the next limit. Not measured here: multi-node transfer times and `ray.wait` over thousands of "
              "in-flight calls.", ""]
    return lines



@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """Command line: measure (``--explorers``), or write the report (``--report``)."""
    p = BenchParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--explorers", type=positive_int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--algo", default="impala", help="impala (asynchronous) or ppo (synchronous)")
    p.add_argument("--n-envs", type=positive_int, default=4, help="envs per explorer")
    p.add_argument("--n-steps", type=positive_int, default=64, help="steps per env per rollout")
    p.add_argument("--sleep-ms", type=seconds_float, default=2.0, help="milliseconds each env step sleeps")
    p.add_argument("--seconds", type=positive_seconds, default=30.0, help="measuring window per run")
    p.add_argument("--warmup", type=seconds_float, default=8.0, help="seconds of training before measuring")
    p.add_argument("--jsonl", help="append results here")
    p.add_argument("--report", metavar="JSONL", help="write the markdown section from these results")
    p.add_argument("--out", help="with --report: the markdown file to update (e.g. benchmarks/RESULTS.md)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        args.explorers = args.explorers[0]
        print(json.dumps(worker(args)))
    elif args.report:
        section = report(args.report)
        if args.out:
            replace_section(args.out, section, START, END)
        print(section)
    else:
        if args.jsonl:
            check_appendable(args.jsonl)
        measure(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
