"""The off-policy section of RESULTS.md (:func:`build_section`) from ``bench_offpolicy.py``'s results rows, and the
settings both share: rl-zoo3's hyperparameters (:data:`SPEED`) and published returns (:data:`RL_ZOO3`)."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

BEGIN, END = "<!-- offpolicy:begin -->", "<!-- offpolicy:end -->"
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
