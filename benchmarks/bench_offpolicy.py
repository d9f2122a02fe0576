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
import subprocess
import sys
import time
from pathlib import Path

from _common import (BenchParser, append_jsonl, check_appendable, input_error, one_line_errors, positive_int,
                     read_jsonl, real_transitions, replace_section, require_sb3, seed_int, tagged_json)
from _offpolicy_report import (BEGIN, END, FINAL_EPISODES, PRECISIONS, RL_ZOO3, SPEED,  # noqa: F401
                               build_section)
from _report import cpu_model

HERE = Path(__file__).resolve().parent
RESULTS_JSONL = HERE / "offpolicy_results.jsonl"
RESULTS_MD = HERE / "RESULTS.md"
STATE_ROOT = HERE / "out" / "offpolicy-state"
RESULT_TAG = "BENCH_RESULT "


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
def _other_jsonl(jsonl: Path | None) -> Path | None:
    """``jsonl`` where it is another file than :data:`RESULTS_JSONL`, None where it is that file (however named: the
    default given by name keeps the default state and report)."""
    return None if jsonl is None or Path(jsonl).resolve() == RESULTS_JSONL.resolve() else jsonl


def _state_dir(algo: str, env: str, seed: int, jsonl: Path | None = None) -> Path:
    """Where ``quality --segment`` keeps a run's state between calls: under :data:`STATE_ROOT`, or with ``--jsonl FILE``
    under ``FILE.state/`` (a smoke run's state, kept apart as its rows are: in STATE_ROOT a later run of the same
    algorithm, env and seed resumed it). The default file named (``--jsonl benchmarks/offpolicy_results.jsonl``)
    keeps the default state, which a run started without ``--jsonl`` resumes."""
    other = _other_jsonl(jsonl)
    return (STATE_ROOT if other is None else Path(f"{other}.state")) / f"{algo}-{env}-{seed}"


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
        if _other_jsonl(jsonl) is not None:  # FILE.state/ stayed behind, empty (another run's state keeps it)
            try:
                path.parent.rmdir()
            except OSError:
                pass
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


def write_report(jsonl: Path | None = None) -> None:
    """Replace (or append) the off-policy section of RESULTS.md, from ``jsonl`` (default :data:`RESULTS_JSONL`); a
    missing, broken or empty results file is a one-line error that leaves it as it was. The section names ``jsonl``
    (not where it is the default file named: a path of this machine in the committed section)."""
    section = build_section(_load(jsonl), _other_jsonl(jsonl))
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
    if args.cmd in ("speed", "quality"):  # before the run, whose row would be lost at its end
        check_appendable(args.jsonl or RESULTS_JSONL)
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
