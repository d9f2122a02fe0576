#!/usr/bin/env python
"""Learning quality of the on-policy presets (A2C, REINFORCE, TRPO, NPG, ACER) over several seeds.

One (algorithm, env, seed) per invocation, so each run fits in its own short command; each
appends one JSON line. ``report`` turns the lines into a markdown section of RESULTS.md.

    python benchmarks/onpolicy_quality.py run a2c CartPole-v1 1 --jsonl benchmarks/onpolicy_quality.jsonl
    python benchmarks/onpolicy_quality.py report --jsonl benchmarks/onpolicy_quality.jsonl --out benchmarks/RESULTS.md
    python benchmarks/onpolicy_quality.py run a2c CartPole-v1 1 --jsonl /tmp/smoke.jsonl --max-steps 400 \
        --final-episodes 1                                            # smoke check (seconds)

Each run trains the shipped preset (``canter/configs/ALGO/ENV.yaml``: budget, target, evaluation
schedule) with the given seed and one torch thread, then evaluates the final policy
deterministically on ``--final-episodes`` fresh episodes. ``--max-steps`` overrides the preset's budget
(for a smoke check); the report gives each budget its own row (a row of another ``--max-steps`` no verdict
against the bar, which is for the preset's budget) and takes the latest run of each seed.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from _common import (BenchParser, append_jsonl, check_appendable, input_error, one_line_errors, positive_int,
                     read_jsonl, replace_section, seed_int)

# rl-zoo3's budget and published result (benchmark.md: one run, deterministic evaluation) where it
# lists the pair; ACER only in the Stable-Baselines2 zoo (budget only).
RL_ZOO = {
    ("a2c", "CartPole-v1"): ("500k", "500.0"), ("a2c", "Acrobot-v1"): ("500k", "-83.4"),
    ("trpo", "CartPole-v1"): ("100k", "500.0"), ("trpo", "Pendulum-v1"): ("100k", "-174.6 (gSDE)"),
    ("acer", "CartPole-v1"): ("500k (SB2 zoo)", "n/a"),
}
# The issue's bars; Acrobot's "about -83" is rl-zoo3's published -83.35. A row meets its bar when the
# median over seeds of the final deterministic evaluation is at least the bar.
BAR = {("a2c", "CartPole-v1"): 500, ("a2c", "Acrobot-v1"): -83.35, ("trpo", "CartPole-v1"): 500,
       ("trpo", "Pendulum-v1"): -200, ("acer", "CartPole-v1"): 500, ("reinforce", "CartPole-v1"): 500}
START, END = "<!-- onpolicy_quality:start -->", "<!-- onpolicy_quality:end -->"


def run(algo: str, env: str, seed: int, final_episodes: int, max_steps: int | None = None) -> dict:
    """Train the preset with ``seed`` (and ``max_steps`` in place of its budget, when given); return budget,
    steps, best/last/final evaluation, wall time."""
    import canter
    from canter.config import resolve_config
    from canter.trainers.evaluation import evaluate

    # a budget other than the preset's gets no verdict (the preset's own, given with --max-steps, keeps it)
    other_budget = max_steps is not None and max_steps != resolve_config(algo, env)[0].max_steps
    t0 = time.perf_counter()
    budget = {} if max_steps is None else {"max_steps": max_steps}
    trainer = canter.make_trainer(algo, env, seed=seed, torch_threads=1, **budget)
    last = None
    for last in trainer():
        pass
    wall = time.perf_counter() - t0
    final = evaluate(trainer.agent, trainer.eval_env, final_episodes, seed=10_000 + seed)
    trainer.close()
    return {"algo": algo, "env": env, "seed": seed, "budget": trainer.run.max_steps,
            "target": trainer.run.target_reward, "steps": trainer.step, "stop_reason": last.stop_reason,
            "best_eval": trainer.best_eval_return, "last_eval": trainer.last_eval.mean_return,
            "final_eval": final.mean_return, "final_episodes": final_episodes, "wall_s": round(wall, 1),
            **({"max_steps_given": True} if other_budget else {})}  # not the preset's budget: no verdict


def _spread(values: list[float], digits: int = 1) -> str:
    med = statistics.median(values)
    text = f"{med:,.{digits}f}"
    if len(values) > 1:
        text += f" ({min(values):,.{digits}f} to {max(values):,.{digits}f})"
    return text


def report(rows: list[dict]) -> str:
    """The markdown section (between the START/END markers)."""
    groups: dict[tuple[str, str, int], dict[int, dict]] = {}
    for r in rows:  # one row per budget (a smoke run's own), the latest run of each seed
        groups.setdefault((r["algo"], r["env"], r["budget"]), {})[r["seed"]] = r
    lines = [START, "## On-policy learning quality\n",
             "Each row is the shipped preset (`canter train ALGO --env ENV --seed S`) over the listed seeds, one"
             " torch thread, one run per command on a shared 2-core machine. Cells are the median over seeds with"
             " (min to max). *Best eval*: best mean of the 10-episode deterministic evaluations during training (the"
             " run stops when it reaches the preset's target). *Final eval*: the final policy on fresh deterministic"
             " episodes (per seed, in seed order). *Steps*: env steps used (the run stops at the target or at the budget)."
             " *Verdict*: the median final eval against the issue's bar (Acrobot's \"about -83\" is rl-zoo3's"
             " published -83.35). rl-zoo3's published numbers are one run each, deterministic evaluation.\n",
             "| algo | env | seeds | budget (rl-zoo3) | steps used | best eval | final eval (episodes) | final eval per seed"
             " | bar | rl-zoo3 published | verdict | wall s |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (algo, env, _), by_seed in sorted(groups.items()):
        rs = [by_seed[seed] for seed in sorted(by_seed)]
        zoo_budget, zoo_result = RL_ZOO.get((algo, env), ("not listed", "n/a"))
        finals = [r["final_eval"] for r in rs]
        bar = BAR.get((algo, env))
        med = statistics.median(finals)
        verdict = "" if bar is None else (f"meets ({med:,.2f} >= {bar})" if med >= bar else f"MISSES ({med:,.2f} < {bar})")
        if bar is not None and any(r.get("max_steps_given") for r in rs):  # the bar is for the preset's budget
            verdict = "not comparable (run --max-steps, not the preset's budget)"
        lines.append(
            f"| {algo} | {env} | {' '.join(str(r['seed']) for r in rs)} | {rs[0]['budget']:,} ({zoo_budget}) |"
            f" {_spread([r['steps'] for r in rs], 0)} | {_spread([r['best_eval'] for r in rs])} |"
            f" {_spread(finals)} ({rs[0]['final_episodes']}) | {', '.join(f'{x:,.1f}' for x in finals)} |"
            f" {'' if bar is None else bar} | {zoo_result} | {verdict} | {_spread([r['wall_s'] for r in rs])} |")
    lines.append("\nREINFORCE has no rl-zoo3 entry (SB3 has no REINFORCE). ACER is only in the Stable-Baselines2 zoo"
                 " (500k steps, no published result). Reproduce one cell with `python benchmarks/onpolicy_quality.py"
                 " run ALGO ENV SEED --jsonl benchmarks/onpolicy_quality.jsonl` (one run per command), then"
                 " `python benchmarks/onpolicy_quality.py report --jsonl benchmarks/onpolicy_quality.jsonl --out"
                 " benchmarks/RESULTS.md`.")
    lines.append("\n<details><summary>Raw per-run results (JSON)</summary>\n\n```json")
    lines += [json.dumps(r) for r in rows]
    lines += ["```\n</details>", END]
    return "\n".join(lines) + "\n"



@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """Command line: ``run`` one preset and seed, or build the report from the stored runs."""
    p = BenchParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="train one preset with one seed, append a JSON line")
    r.add_argument("algo")
    r.add_argument("env")
    r.add_argument("seed", type=seed_int)
    r.add_argument("--jsonl", required=True)
    r.add_argument("--final-episodes", type=positive_int, default=100)
    r.add_argument("--max-steps", type=positive_int, help="train this many env steps instead of the preset's budget "
                   "(a smoke check; its rows get their own table row)")
    s = sub.add_parser("report", help="write the markdown section")
    s.add_argument("--jsonl", required=True)
    s.add_argument("--out", help="RESULTS.md to update (its on-policy quality section only)")
    args = p.parse_args(argv)
    if args.cmd == "run":
        check_appendable(args.jsonl)
        res = run(args.algo, args.env, args.seed, args.final_episodes, args.max_steps)
        append_jsonl(args.jsonl, [res])
        print(json.dumps(res))
        return 0
    rows = read_jsonl(args.jsonl, ("algo", "env", "seed", "budget", "final_eval"))
    if not rows:  # an empty table would replace the section that is there
        input_error(f"no runs in {args.jsonl}" + (f"; {args.out} left as it was" if args.out else ""))
    section = report(rows)
    if args.out:
        replace_section(Path(args.out), section, START, END)
    else:
        sys.stdout.write(section)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
