#!/usr/bin/env python
"""Off-policy benchmarks: speed vs Stable-Baselines3 (SAC, TD3 on Pendulum-v1) and learning quality
of canter's presets against rl-zoo3's published results.

Every measurement is its own fresh Python process, run one after another; both libraries use one
torch thread and the same seed. Results are appended to ``benchmarks/offpolicy_results.jsonl``
(one JSON object per run; ``--jsonl FILE`` another file, for smoke runs and tests, whose ``quality --segment``
state is kept apart too, in ``FILE.state/``) and ``report`` rewrites the
off-policy section of ``benchmarks/RESULTS.md`` from that file (or ``--jsonl``'s), so long tables can be filled
one command at a time:

    python benchmarks/bench_offpolicy.py speed --steps 3000            # SAC + TD3, canter and SB3
    python benchmarks/bench_offpolicy.py quality sac Pendulum-v1 --seed 1
    python benchmarks/bench_offpolicy.py quality sac HalfCheetah-v5 --seed 1 --max-steps 100000 \\
        --segment 40000                                                 # resumable, one segment per call
    python benchmarks/bench_offpolicy.py report
    python benchmarks/bench_offpolicy.py speed --steps 200 --jsonl /tmp/smoke.jsonl   # a smoke run, kept apart
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import (BenchParser, append_jsonl, input_error, one_line_errors, positive_int, read_jsonl,
                     real_transitions, replace_section, require_sb3, seed_int, tagged_json)
from _report import cpu_model

HERE = Path(__file__).resolve().parent
RESULTS_JSONL = HERE / "offpolicy_results.jsonl"
RESULTS_MD = HERE / "RESULTS.md"
STATE_ROOT = HERE / "out" / "offpolicy-state"
BEGIN, END = "<!-- offpolicy:begin -->", "<!-- offpolicy:end -->"
RESULT_TAG = "BENCH_RESULT "
FINAL_EPISODES = 100
PRECISIONS = ("highest", "high", "medium")

# rl-zoo3 hyperparameters for Pendulum-v1 (rl-baselines3-zoo hyperparams/{sac,td3}.yml), identical in
# both libraries. Throughput runs use learning_starts=100 so that nearly every step is a gradient step.
SPEED = {
    "sac": dict(lr=1e-3, buffer_size=1_000_000, batch_size=256, gamma=0.99, tau=0.005, train_freq=1,
                gradient_steps=1, learning_starts=100, net_arch=[256, 256]),
    "td3": dict(lr=1e-3, buffer_size=200_000, batch_size=256, gamma=0.98, tau=0.005, train_freq=1,
                gradient_steps=1, learning_starts=100, net_arch=[400, 300], noise_std=0.1),
}

# rl-zoo3 benchmark.md (mean reward of the trained agent, deterministic policy, ~150k eval steps).
RL_ZOO3 = {
    ("sac", "Pendulum-v1"): (-156.995, 88.714, 20_000),
    ("td3", "Pendulum-v1"): (-151.855, 90.227, 20_000),
    ("ddpg", "Pendulum-v1"): (-152.099, 94.282, 20_000),
    ("sac", "MountainCarContinuous-v0"): (94.679, 1.134, 50_000),
    ("dqn", "Acrobot-v1"): (-76.639, 11.752, 100_000),
    ("dqn", "LunarLander-v3"): (154.382, 79.241, 100_000),
    ("sac", "HalfCheetah-v5"): (9535.451, 100.470, 1_000_000),
}


def _emit(result: dict) -> None:
    print(RESULT_TAG + json.dumps(result), flush=True)


def _append(result: dict, jsonl: Path | None = None) -> None:
    append_jsonl(jsonl or RESULTS_JSONL, [result])


def _meta() -> dict:
    import gymnasium
    import numpy
    import torch

    versions = {"torch": torch.__version__, "gymnasium": gymnasium.__version__, "numpy": numpy.__version__,
                "python": platform.python_version()}
    try:
        import stable_baselines3

        versions["stable-baselines3"] = stable_baselines3.__version__
    except ImportError:
        pass
    return {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            "load": os.getloadavg()[0], "versions": versions, "cpu": cpu_model(), "cpus": os.cpu_count()}


# ---------------------------------------------------------------------------------------------- speed
def speed_worker(lib: str, algo: str, steps: int, seed: int, precision: str = "highest") -> None:
    """Env-steps/s of pure training (no evaluation) in this fresh process.

    ``precision`` is torch's float32 matmul precision: canter's ``matmul_precision`` field (set
    during its updates), for SB3 the process-wide ``torch.set_float32_matmul_precision``.
    """
    import torch

    torch.set_num_threads(1)
    cfg = SPEED[algo]
    if lib == "canter":
        import canter

        hp = dict(cfg, matmul_precision=precision)
        if algo == "td3":
            hp.update(action_noise="normal")
        # one step more than measured, so that the evaluation at the end of the budget never runs
        trainer = canter.make_trainer(algo, "Pendulum-v1", seed=seed, max_steps=steps + 1, eval_every=0,
                                      eval_episodes=1, torch_threads=1, sets=["target_reward=null"], hparams=hp)
        t0 = time.perf_counter()
        for rec in trainer():
            if rec.step >= steps:
                break
        dt = time.perf_counter() - t0
        done, transitions = trainer.step, real_transitions(trainer)  # less the reset-only steps
        trainer.close()
    else:
        import numpy as np
        from stable_baselines3 import SAC, TD3
        from stable_baselines3.common.noise import NormalActionNoise

        torch.set_float32_matmul_precision(precision)
        common = dict(learning_rate=cfg["lr"], buffer_size=cfg["buffer_size"], batch_size=cfg["batch_size"],
                      gamma=cfg["gamma"], tau=cfg["tau"], train_freq=cfg["train_freq"],
                      gradient_steps=cfg["gradient_steps"], learning_starts=cfg["learning_starts"],
                      policy_kwargs=dict(net_arch=cfg["net_arch"]), seed=seed, device="cpu", verbose=0)
        if algo == "sac":
            model = SAC("MlpPolicy", "Pendulum-v1", **common)
        else:
            noise = NormalActionNoise(np.zeros(1), cfg["noise_std"] * np.ones(1))
            model = TD3("MlpPolicy", "Pendulum-v1", action_noise=noise, **common)
        t0 = time.perf_counter()
        model.learn(total_timesteps=steps)
        dt = time.perf_counter() - t0
        done = transitions = int(model.num_timesteps)
    _emit({"kind": "speed", "lib": lib, "algo": algo, "steps": done, "transitions": transitions, "seconds": dt,
           "sps": transitions / dt,
           "threads": torch.get_num_threads(), "seed": seed, "matmul_precision": precision})


def run_speed(steps: int, seed: int, precision: str = "highest", jsonl: Path | None = None) -> None:
    """SAC and TD3, canter then SB3, each in a fresh subprocess; appended to ``jsonl`` (default
    :data:`RESULTS_JSONL`)."""
    meta = _meta()
    for algo in ("sac", "td3"):
        for lib in ("canter", "sb3"):
            cmd = [sys.executable, __file__, "speed-worker", lib, algo, "--steps", str(steps), "--seed", str(seed),
                   "--matmul-precision", precision]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
            if proc.returncode != 0:
                raise SystemExit(f"{lib} {algo} failed:\n{proc.stderr[-3000:]}")
            res = {**tagged_json(proc.stdout, RESULT_TAG), **meta}
            _append(res, jsonl)
            print(f"{algo} {lib} ({precision}): {res['sps']:.1f} env-steps/s", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------- quality
def _state_dir(algo: str, env: str, seed: int, jsonl: Path | None = None) -> Path:
    """Where ``quality --segment`` keeps a run's state between calls: under :data:`STATE_ROOT`, or with ``--jsonl FILE``
    under ``FILE.state/`` (a smoke run's state, kept apart as its rows are: in STATE_ROOT a later run of the same
    algorithm, env and seed resumed it)."""
    return (STATE_ROOT if jsonl is None else Path(f"{jsonl}.state")) / f"{algo}-{env}-{seed}"


def _save_segment(trainer, path: Path, segment: int, wall: float, evals: list) -> None:
    from canter.checkpoint import save_checkpoint

    path.mkdir(parents=True, exist_ok=True)
    save_checkpoint(path / "agent", {"agent": trainer.agent.state_dict()}, {"step": trainer.step})
    trainer.buffer.save(path / "buffer.npz")
    (path / "trainer.json").write_text(json.dumps({
        "max_steps": trainer.run.max_steps,
        "step": trainer.step, "episodes": trainer.episode_count, "iterations": trainer.iteration_count,
        "evaluations": trainer.evaluations, "best": trainer.best_eval_return, "segment": segment,
        "wall": wall, "rng": trainer.rng.bit_generator.state, "evals": evals,
    }))


def _check_resumable(path: Path, total: int) -> None:
    """A one-line error (exit 2) when the segment saved in ``path`` belongs to a run of another budget (a smoke
    check's, say), which this call would otherwise continue as its own."""
    saved = json.loads((path / "trainer.json").read_text()).get("max_steps")  # None: saved before it was recorded
    if saved is not None and saved != total:
        input_error(f"{path} holds an unfinished run of {saved:,} steps, not {total:,}: resume it with --max-steps "
                    f"{saved}, or delete that directory to start afresh")


def _resume(trainer, path: Path) -> dict:
    """Load a saved segment into a freshly built trainer (called from inside its setup)."""
    from canter.checkpoint import load_checkpoint

    info = json.loads((path / "trainer.json").read_text())
    state, _ = load_checkpoint(path / "agent")
    trainer.agent.load_state_dict(state["agent"])
    trainer.buffer.load(path / "buffer.npz")
    trainer.rng.bit_generator.state = info["rng"]
    trainer.step, trainer.episode_count = info["step"], info["episodes"]
    trainer.iteration_count, trainer.evaluations = info["iterations"], info["evaluations"]
    trainer.best_eval_return = info["best"]
    every = trainer.run.eval_every
    trainer._next_eval = (trainer.step // every + 1) * every if every else None
    return info


def run_quality(algo: str, env: str, seed: int, max_steps: int | None, segment: int | None,
                jsonl: Path | None = None) -> None:
    """Train ``algo`` on ``env`` with its shipped preset (no early stop), then evaluate the final
    deterministic policy on ``FINAL_EPISODES`` episodes. With ``segment``, train at most that many
    steps in this call and save the state; the next call resumes it (at an episode boundary: the
    env is reset, which the replay buffer records as an episode end). Appended to ``jsonl`` (default
    :data:`RESULTS_JSONL`)."""
    import torch

    import canter
    from canter.envs import make_vec_env
    from canter.trainers.evaluation import evaluate

    overrides = {"max_steps": max_steps} if max_steps else {}
    trainer = canter.make_trainer(algo, env, seed=seed, sets=["target_reward=null"], torch_threads=1, **overrides)
    total = trainer.run.max_steps
    path = _state_dir(algo, env, seed, jsonl)
    info: dict = {"segment": 0, "wall": 0.0}
    evals: list = []
    resuming = segment is not None and (path / "trainer.json").exists()
    if resuming:
        _check_resumable(path, total)
    setup = trainer.setup

    def setup_and_resume() -> None:
        setup()
        if resuming:
            loaded = _resume(trainer, path)
            evals.extend(tuple(e) for e in loaded.pop("evals", []))
            info.update(loaded)
            reset = trainer.env.reset
            trainer.env.reset = lambda seed=None: reset(seed=None if seed is None else seed + 7919 * info["segment"])
        info["stop_at"] = total if segment is None else min(total, trainer.step + segment)

    trainer.setup = setup_and_resume
    t0 = time.perf_counter()
    for rec in trainer():
        if rec.evaluation is not None:
            evals.append((rec.step, rec.evaluation.mean_return))
        if info["stop_at"] <= trainer.step < total:
            wall = info["wall"] + time.perf_counter() - t0
            _save_segment(trainer, path, info["segment"] + 1, wall, evals)
            trainer.close()
            print(f"{algo} {env} seed {seed}: segment saved at step {trainer.step:,} after {wall:.0f}s "
                  f"({trainer.step / max(wall, 1e-9):.1f} steps/s overall)", file=sys.stderr)
            _append({"kind": "segment", "algo": algo, "env": env, "seed": seed, "step": trainer.step,
                     "wall_s": wall, "evals": evals, **_meta()}, jsonl)
            return
    train_wall = info["wall"] + time.perf_counter() - t0
    trainer.close()
    eval_env = make_vec_env(env, 10)
    try:
        with torch.inference_mode():
            final = evaluate(trainer.agent, eval_env, FINAL_EPISODES, seed=10_000 + seed)
    finally:
        eval_env.close()
    res = {"kind": "quality", "algo": algo, "env": env, "seed": seed, "steps": trainer.step,
           "final_mean": final.mean_return, "final_std": final.std_return, "final_episodes": final.episodes,
           "best_periodic_eval": trainer.best_eval_return, "evals": evals, "train_wall_s": train_wall,
           "segments": info["segment"] + 1, "sps": trainer.step / train_wall, **_meta()}
    _append(res, jsonl)
    if segment is not None:  # recorded: a later run of this algorithm, env and seed starts afresh
        shutil.rmtree(path, ignore_errors=True)
    print(f"{algo} {env} seed {seed}: final {final.mean_return:.1f} ± {final.std_return:.1f} "
          f"({FINAL_EPISODES} episodes) after {trainer.step:,} steps in {train_wall:.0f}s", file=sys.stderr)


# ---------------------------------------------------------------------------------------------- report
#: the kinds of rows a report shows (a ``segment`` row is a resumable run's progress, shown nowhere)
REPORTED = ("speed", "flops", "quality")


def _load(jsonl: Path | None = None) -> list[dict]:
    """The rows of ``jsonl`` (default :data:`RESULTS_JSONL`); a missing file, or one without a row to report, is a
    one-line error (exit 2) and RESULTS.md is left as it was: an empty section replaced the one there (``report
    --jsonl`` given a mistyped path)."""
    path = jsonl or RESULTS_JSONL
    rows = read_jsonl(path, ("kind",))  # a missing file: 'cannot read the results file ...'
    if not any(r.get("kind") in REPORTED for r in rows):
        input_error(f"no speed, flops or quality results in {path}; {RESULTS_MD} left as it was")
    return rows


def _spread(values: list[float], fmt: str = "{:.1f}") -> str:
    med = statistics.median(values)
    if len(values) == 1:
        return fmt.format(med)
    return f"{fmt.format(med)} ({fmt.format(min(values))} to {fmt.format(max(values))})"


def _versions(rows: list[dict]) -> str:
    return json.dumps((rows[-1] if rows else {}).get("versions", {}))


def _pairs(speed: list[dict], algo: str, precision: str) -> dict[int, list[tuple[int, dict, dict]]]:
    """``{steps: [(seed, canter run, SB3 run), ...]}``: a canter run and the SB3 run recorded right after it
    (``run_speed``'s order) with the same seed and budget make a pair; the latest pair of each budget and seed.

    A canter run is never paired with an SB3 run of another invocation (one whose SB3 run failed, or a
    shorter ``--steps``), and budgets are never mixed in one row."""
    rows = [r for r in speed if r["algo"] == algo and r.get("matmul_precision", "highest") == precision]
    latest: dict[int, dict[int, tuple[dict, dict]]] = {}
    for c, b in zip(rows, rows[1:]):
        if c["lib"] == "canter" and b["lib"] == "sb3" and c["seed"] == b["seed"] and c["steps"] == b["steps"]:
            latest.setdefault(c["steps"], {})[c["seed"]] = (c, b)
    return {steps: [(seed, c, b) for seed, (c, b) in sorted(by_seed.items())]
            for steps, by_seed in sorted(latest.items())}


def _speed_row(algo: str, precision: str, steps: int, pairs: list[tuple[int, dict, dict]]) -> str:
    """One row of the speed table: the pairs of one algorithm, precision and budget."""
    c = [p[1]["sps"] for p in pairs]
    b = [p[2]["sps"] for p in pairs]
    label = "highest (plain float32, the default)" if precision == "highest" else \
        f"**{precision}** (bfloat16 matmuls where the CPU has them; not the default)"
    return (f"| {algo.upper()} | {'-'.join(map(str, SPEED[algo]['net_arch']))} | {label} | {steps:,} | "
            f"{', '.join(str(p[0]) for p in pairs)} | {', '.join(f'{x:.1f}' for x in c)} | "
            f"{', '.join(f'{x:.1f}' for x in b)} | {statistics.median(c):.1f} | {statistics.median(b):.1f} | "
            f"{_spread([x / y for x, y in zip(c, b)], '{:.2f}')} |")


def _speed_section(speed: list[dict]) -> list[str]:
    out = ["## SAC and TD3 on Pendulum-v1 vs SB3", "",
           "Env-steps/s of pure training with one gradient step per env step. Same hyperparameters in both "
           "libraries (rl-zoo3's, with `learning_starts: 100` so that nearly every step trains), one torch thread, "
           "same seed, each measurement a fresh process, canter and SB3 run back to back per seed (a pair), no "
           "evaluation during the run. Ratio: canter/SB3 per pair, median (min to max) over the pairs.", "",
           "| algorithm | network | float32 matmul precision | steps | seeds | canter env-steps/s per seed | "
           "SB3 env-steps/s per seed | canter median | SB3 median | ratio canter/SB3 |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for precision in PRECISIONS:
        for algo in ("sac", "td3"):
            budgets = _pairs(speed, algo, precision)
            out += [_speed_row(algo, precision, steps, pairs) for steps, pairs in budgets.items()]
            if precision == "highest" and budgets:
                steps, pairs = max(budgets.items())  # the longest budget: the least start-up in its seconds
                med = statistics.median(c["sps"] / b["sps"] for _, c, b in pairs)
                verdicts.append(f"{algo.upper()} {'meets' if med >= 2 else 'misses'} it (median {med:.2f}x at "
                                f"{steps:,} steps)")
    if verdicts:
        out += ["", "Issue target canter >= 2x SB3 at the default float32 precision: " + "; ".join(verdicts) + "."]
    out += ["", "Command (one seed per call; `--matmul-precision medium` for the labelled rows): "
            "`python benchmarks/bench_offpolicy.py speed --steps 3000 --seed S`. "
            f"Versions: {_versions(speed)}.", ""]
    return out


def _flops_section(flops: list[dict], speed: list[dict]) -> list[str]:
    """Work per gradient step and the float32 bound it puts on the canter/SB3 ratio."""
    latest = {(r["algo"], r["lib"]): r for r in flops}
    out = ["### Where the time of one update goes (float32)", "",
           "Floating-point operations of one gradient step (batch 256) counted by `torch.utils.flop_counter` "
           "(TD3: mean of two steps, its actor learns every second one), measured seconds per update (replay sample "
           "included), and the time those operations take at this CPU's one-thread float32 rate for a 256x256x256 "
           "matmul (the best case for these layer sizes). Bound: SB3's measured seconds per env step (median of the "
           "pairs of the table's longest budget at the default precision, as in the verdict) divided by canter's "
           "matmul-only time per update, i.e. the largest canter/SB3 ratio "
           "possible even if canter had zero overhead outside float32 matmuls at that rate.", "",
           "| algorithm | library | MFLOP per update | ms per update | achieved GFLOP/s | ms at the matmul rate | "
           "bound on canter/SB3 |", "|---|---|---|---|---|---|---|"]
    for algo in ("sac", "td3"):
        budgets = _pairs(speed, algo, "highest")  # not SB3 runs of other budgets (a short --steps) or without a pair
        sb3 = [b["sps"] for _, _, b in max(budgets.items())[1]] if budgets else []
        for lib in ("canter", "sb3"):
            r = latest.get((algo, lib))
            if r is None:
                continue
            bound = f"{(1000 / statistics.median(sb3)) / r['ms_at_sgemm_rate']:.2f}" if sb3 and lib == "canter" else ""
            out.append(f"| {algo.upper()} | {'canter' if lib == 'canter' else 'SB3'} | {r['mflop_per_update']:.0f} | "
                       f"{r['ms_per_update']:.2f} | {r['gflops_achieved']:.1f} | {r['ms_at_sgemm_rate']:.2f} | "
                       f"{bound} |")
    rate = flops[-1]["sgemm_256_gflops"]
    out += ["", f"One-thread float32 matmul rate (256x256 @ 256x256): {rate:.1f} GFLOP/s. "
            "Command: `python benchmarks/offpolicy_flops.py`.", ""]
    return out


def _quality_section(quality: list[dict]) -> list[str]:
    out = ["## Off-policy learning quality (rl-zoo3 budgets)", "",
           "Each seed is its own process: train with the shipped preset (`canter/configs/ALGO/ENV.yaml`) for "
           "rl-zoo3's step budget with no early stop, then evaluate the final policy deterministically on "
           f"{FINAL_EPISODES} episodes (10 vector envs, evaluation seed 10000 + seed). Bar: rl-zoo3's `benchmark.md` "
           "mean reward (one trained agent, about 150k evaluation steps). Verdict compares the median over seeds "
           "with the bar.", "",
           "| algorithm | env | budget | seeds | final mean return per seed | median | min to max | rl-zoo3 bar | "
           "verdict | train wall s per seed (median) | env-steps/s (median) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    keys = sorted({(r["algo"], r["env"], r["steps"]) for r in quality}, key=lambda k: (k[1], k[0], k[2]))
    for algo, env, steps in keys:
        rs = sorted((r for r in quality if (r["algo"], r["env"], r["steps"]) == (algo, env, steps)),
                    key=lambda r: r["seed"])
        rs = list({r["seed"]: r for r in rs}.values())  # the latest run of each seed
        finals = [r["final_mean"] for r in rs]
        med = statistics.median(finals)
        ref = RL_ZOO3.get((algo, env))
        ref_txt = "n/a" if ref is None else f"{ref[0]:.1f} ± {ref[1]:.1f} at {ref[2] // 1000}k"
        if ref is None:
            verdict = "no bar"
        elif not ref[2] <= steps < 1.01 * ref[2]:  # a train_freq chunk may overshoot the budget slightly
            verdict = f"not comparable (bar is at {ref[2] // 1000}k steps)"
        else:
            verdict = "meets the bar" if med >= ref[0] else f"misses the bar by {ref[0] - med:.1f}" + (
                " (less than rl-zoo3's ± std)" if ref[0] - med < ref[1] else "")
        walls = [r["train_wall_s"] for r in rs]
        out.append(f"| {algo.upper()} | {env} | {steps:,} | {', '.join(str(r['seed']) for r in rs)} | "
                   f"{', '.join(f'{x:.1f}' for x in finals)} | {med:.1f} | {min(finals):.1f} to {max(finals):.1f} | "
                   f"{ref_txt} | {verdict} | {', '.join(f'{x:.0f}' for x in walls)} ({statistics.median(walls):.0f}) "
                   f"| {statistics.median(r['sps'] for r in rs):.0f} |")
    out += ["", "Command per cell: `python benchmarks/bench_offpolicy.py quality ALGO ENV --seed S` "
            "(HalfCheetah: `--max-steps 100000 --segment 30000`, resumable segments of at most 30k steps per call, the env reset at each segment boundary). "
            f"Versions: {_versions(quality)}.", ""]
    return out


def build_section(rows: list[dict], jsonl: Path | None = None) -> str:
    """The markdown sections (between the markers) from the raw results (read from ``jsonl``, which the section
    names; default :data:`RESULTS_JSONL`)."""
    source, flag = ("benchmarks/offpolicy_results.jsonl", "") if jsonl is None else (str(jsonl), f" --jsonl {jsonl}")
    out = [BEGIN, f"Raw results: `{source}`; the sections down to the end marker are generated by "
           f"`python benchmarks/bench_offpolicy.py report{flag}`.", ""]
    speed = [r for r in rows if r["kind"] == "speed"]
    if speed:
        out += _speed_section(speed)
    flops = [r for r in rows if r["kind"] == "flops"]
    if flops:
        out += _flops_section(flops, speed)
    quality = [r for r in rows if r["kind"] == "quality"]
    if quality:
        out += _quality_section(quality)
    done = {(r["algo"], r["env"], r["seed"]) for r in quality}
    latest = {(r["algo"], r["env"], r["seed"]): r for r in rows if r["kind"] == "segment"}
    unfinished = [r for key, r in sorted(latest.items()) if key not in done]
    if unfinished:
        out += ["### Unfinished long runs (saved segments)", "", "| algorithm | env | seed | steps done | wall s | "
                "env-steps/s | periodic evals (step: mean return) |", "|---|---|---|---|---|---|---|"]
        for r in unfinished:
            ev = ", ".join(f"{s:,}: {v:.0f}" for s, v in r["evals"]) or "none"
            out.append(f"| {r['algo'].upper()} | {r['env']} | {r['seed']} | {r['step']:,} | {r['wall_s']:.0f} | "
                       f"{r['step'] / r['wall_s']:.0f} | {ev} |")
        out.append("")
    machines = sorted({f"{r['cpu']}, {r['cpus']} logical cores" if "cpu" in r else
                       "not recorded (runs before 2026-11-28)" for r in rows})
    out += [f"Machine (as each run recorded it; shared with other jobs, the measurements of one command run one "
            f"after another): {'; '.join(machines)}.", END]
    return "\n".join(out) + "\n"


def write_report(jsonl: Path | None = None) -> None:
    """Replace (or append) the off-policy section of RESULTS.md, from ``jsonl`` (default :data:`RESULTS_JSONL`); a
    missing, broken or empty results file is a one-line error that leaves it as it was."""
    section = build_section(_load(jsonl), jsonl)
    replace_section(RESULTS_MD, section, BEGIN, END)
    print(section)


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """Command line: ``speed`` (with its worker), ``quality`` (one learning run) and ``report``."""
    p = BenchParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("speed", help="SAC and TD3 env-steps/s, canter and SB3")
    s.add_argument("--steps", type=positive_int, default=3000,
                   help="env steps per measurement; more than learning_starts (100), so that it trains")
    s.add_argument("--seed", type=seed_int, default=1)
    w = sub.add_parser("speed-worker")
    w.add_argument("lib", choices=("canter", "sb3"))
    w.add_argument("algo", choices=tuple(SPEED))
    w.add_argument("--steps", type=int, default=3000)
    w.add_argument("--seed", type=seed_int, default=1)
    for sp in (s, w):
        sp.add_argument("--matmul-precision", choices=PRECISIONS, default="highest",
                        help="torch float32 matmul precision in both libraries (highest: plain float32)")
    q = sub.add_parser("quality", help="one seed of one preset, final evaluation")
    q.add_argument("algo")
    q.add_argument("env")
    q.add_argument("--seed", type=seed_int, default=1)
    q.add_argument("--max-steps", type=positive_int, help="override the preset's budget")
    q.add_argument("--segment", type=positive_int, help="train at most this many steps per call (resumable)")
    r = sub.add_parser("report", help="rewrite the off-policy section of RESULTS.md")
    for sp in (s, q, r):
        sp.add_argument("--jsonl", type=Path, help="the results file to append to (report: to read); default "
                        "benchmarks/offpolicy_results.jsonl")
    args = p.parse_args(argv)
    if args.cmd == "speed":
        starts = max(cfg["learning_starts"] for cfg in SPEED.values())
        if args.steps <= starts:  # no gradient step at all: a row of env-stepping that the report pairs as training
            input_error(f"speed --steps must be more than learning_starts ({starts}) so that it measures training, "
                        f"got {args.steps}; the default is 3000")
        require_sb3()
        run_speed(args.steps, args.seed, args.matmul_precision, args.jsonl)
    elif args.cmd == "speed-worker":
        speed_worker(args.lib, args.algo, args.steps, args.seed, args.matmul_precision)
    elif args.cmd == "quality":
        run_quality(args.algo, args.env, args.seed, args.max_steps, args.segment, args.jsonl)
    else:
        write_report(args.jsonl)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
