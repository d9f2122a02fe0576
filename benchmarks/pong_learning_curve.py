#!/usr/bin/env python
"""PPO on Pong for one hour of this machine: canter's learning curve next to rl-zoo3's.

The run (about an hour of 2 CPU cores; rl-zoo3's Atari PPO preset, whose linear LR and clip
schedules span 10M agent steps, cut off by the wall-clock budget)::

    canter train ppo --env PongNoFrameskip-v4 --seed 1 --set max_seconds=3600 --run-dir runs/pong_ppo_1h

then ``python benchmarks/pong_learning_curve.py runs/pong_ppo_1h`` writes
``benchmarks/pong_ppo_1h.png`` (``--png PATH`` another file, for a trial run) and the ``pong_curve`` section of
``benchmarks/RESULTS.md`` (``--out FILE`` another file). A run on another env than Pong is refused while either is
the committed one.

Reference: rl-zoo3's trained agent ``ppo/PongNoFrameskip-v4_1`` in DLR-RM/rl-trained-agents
(Stable-Baselines3, the same preset, 8 envs, seed 4089164106). Its eight ``*.monitor.csv`` files
hold every training episode's game score and length in raw frames; ``RLZOO3_WINDOWS`` below is
derived from them: the mean score of the training episodes (all envs) that ended in each window
of 500k frames, with global frames = 8 x the env's cumulative frames (the envs step in lockstep).
canter's training episode statistics are whole games with their raw score, as in the monitor files.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

from canter.tools.plot import new_figure, save_figure_atomic
from canter.tools.rundata import load_run

from _common import BenchParser, check_section_markers, input_error, one_line_errors, write_section

HERE = Path(__file__).resolve().parent
FRAME_SKIP = 4
WINDOW = 500_000
#: (end of the 500k-frame window, mean training score, episodes) of rl-zoo3's run, see the docstring
RLZOO3_WINDOWS = [
    (500_000, -19.99, 126), (1_000_000, -20.38, 136), (1_500_000, -20.16, 129), (2_000_000, -18.71, 94),
    (2_500_000, -15.94, 65), (3_000_000, -12.26, 43), (3_500_000, -13.63, 51), (4_000_000, -10.72, 50),
    (4_500_000, -8.15, 47), (5_000_000, -5.73, 44), (5_500_000, -3.63, 41), (6_000_000, 0.0, 38),
    (6_500_000, 1.69, 32), (7_000_000, 6.53, 34), (7_500_000, 13.28, 46), (8_000_000, 15.81, 57),
    (8_500_000, 18.2, 66), (9_000_000, 18.66, 65), (9_500_000, 18.1, 68), (10_000_000, 19.29, 68),
]
#: rl-zoo3's run: wall seconds at about 7M frames (its machine, with its periodic evaluations)
RLZOO3_SECONDS_AT_7M = 24_207


def windows(frames: np.ndarray, scores: np.ndarray) -> list[tuple[int, float, int]]:
    """(window end, mean score, episodes) of the episodes that ended in each 500k-frame window."""
    out = []
    for end in range(WINDOW, int(frames.max()) + WINDOW, WINDOW):
        inside = (frames > end - WINDOW) & (frames <= end)
        if inside.any():
            out.append((end, float(scores[inside].mean()), int(inside.sum())))
    return out


def report(run_dir: Path, png: Path | None = None, out: Path | None = None) -> tuple[str, Path]:
    """The markdown section and the figure (written to ``png``, the committed ``benchmarks/pong_ppo_1h.png`` by
    default) for the run in ``run_dir``; the section links the figure relative to ``out`` (``RESULTS.md``'s)."""
    png, out = png or HERE / "pong_ppo_1h.png", out or HERE / "RESULTS.md"
    run = load_run(run_dir)
    if not len(run.history.get("step", ())):  # no game finished yet (or no history.parquet): nothing to plot
        input_error(f"{run_dir} has no finished training episode yet; run it longer, then run this again")
    defaults = ((HERE / "pong_ppo_1h.png").resolve(), (HERE / "RESULTS.md").resolve())
    committed = [n.name for n in (png, out) if n.resolve() in defaults]
    if "pong" not in str(run.env).lower() and committed:  # it replaced Pong's committed figure (and section)
        input_error(f"{run_dir} is a run on {run.env}, not Pong: its curve would replace the committed "
                    f"benchmarks/{' and benchmarks/'.join(committed)}; give "
                    + " and ".join("--png PATH" if n.endswith(".png") else "--out FILE" for n in committed))
    frames = run.history["step"] * FRAME_SKIP
    scores = run.history["episode_return"]
    ours = windows(frames, scores)
    ref = {end: (mean, n) for end, mean, n in RLZOO3_WINDOWS}
    s = run.summary
    steps = int(s.get("steps") or run.history["step"][-1])  # summary.json appears when the run ends
    seconds = float(s.get("wall_seconds") or run.history["wall_time"][-1])

    fig = new_figure(900, 500)
    ax = fig.add_subplot()
    ax.plot(frames / 1e6, scores, ".", ms=2, alpha=0.25, color="tab:blue", label="canter: training episodes")
    ax.plot([e / 1e6 - 0.25 for e, _, _ in ours], [m for _, m, _ in ours], "-o", color="tab:blue", ms=3,
            label="canter: mean per 500k frames")
    ax.plot([e / 1e6 - 0.25 for e, _, _ in RLZOO3_WINDOWS], [m for _, m, _ in RLZOO3_WINDOWS], "-s",
            color="tab:orange", ms=3, label="rl-zoo3 (SB3): mean per 500k frames")
    ev = run.evaluations
    if len(ev.get("step", ())):
        ax.plot(ev["step"] * FRAME_SKIP / 1e6, ev["mean_return"], "^", color="tab:green", ms=6,
                label="canter: evaluation (5 games, deterministic)")
    ax.set_xlabel("frames (millions)")
    ax.set_ylabel("game score")
    ax.set_xlim(0, max(10.0, float(frames.max()) / 1e6 + 0.5))
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    ax.set_title("PPO on PongNoFrameskip-v4: canter (one hour, 2 CPU cores) vs rl-zoo3")
    png = save_figure_atomic(fig, png)

    lines = [
        "## PPO on Pong: one hour of training (`pong_learning_curve.py`)",
        "",
        f"canter `{run.algo}` on `{run.env}`, seed {run.config.get('seed')}, rl-zoo3's Atari PPO preset "
        f"(8 envs x 128 steps, 4 epochs, batch 256, LR 2.5e-4 and clip 0.1 decaying linearly over 10M steps), "
        f"stopped by `max_seconds={run.config.get('max_seconds')}`: {steps:,} agent steps = {steps * FRAME_SKIP:,} "
        f"frames in {seconds:,.0f} s ({steps * FRAME_SKIP / seconds:,.0f} frames/s, "
        f"evaluations included). Reference: rl-zoo3's own run of the same preset (DLR-RM/rl-trained-agents, "
        f"`ppo/PongNoFrameskip-v4_1/*.monitor.csv`), which needed about {RLZOO3_SECONDS_AT_7M:,} s to reach "
        f"7M frames on its machine.",
        "",
        "Mean game score of the training episodes that ended in each window of 500k frames:",
        "",
        "| frames up to | canter | episodes | rl-zoo3 | episodes |",
        "|---|---|---|---|---|",
    ]
    for end, mean, n in ours:
        r = ref.get(end)
        partial = " (partial window)" if end > frames.max() else ""
        lines.append(f"| {end / 1e6:.1f}M{partial} | {mean:.2f} | {n} | "
                     + (f"{r[0]:.2f} | {r[1]} |" if r else "| |"))
    if len(ev.get("step", ())):
        lines += ["", "canter's evaluations (5 whole games, deterministic policy, unclipped score): "
                  + ", ".join(f"{m:.1f} at {st * FRAME_SKIP / 1e6:.1f}M" for st, m in zip(ev["step"], ev["mean_return"]))
                  + f"; best {max(ev['mean_return']):.1f}."]
    link = Path(os.path.relpath(png.resolve(), out.resolve().parent)).as_posix()
    lines += ["", f"![PPO Pong learning curve]({link})", "",
              "- Reproduce: the two commands in the docstring of `benchmarks/pong_learning_curve.py`.",
              "- One run of each library (one seed each): a comparison of two curves, not a statistical claim."]
    return "\n".join(lines) + "\n", png



@one_line_errors
def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    p = BenchParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("--out", type=Path, default=HERE / "RESULTS.md", help="the markdown file whose pong_curve section "
                   "is written (default benchmarks/RESULTS.md)")
    p.add_argument("--png", type=Path, default=None, help="where the figure goes (default benchmarks/pong_ppo_1h.png, "
                   "the committed one: a Pong run only)")
    args = p.parse_args(argv)
    markers = ("<!-- pong_curve: start -->", "<!-- pong_curve: end -->")
    check_section_markers(args.out, *markers)  # before report() replaces the figure: a refused --out kept none of it
    if args.png is not None and args.png.is_dir():  # it was an IsADirectoryError traceback once the figure was drawn
        input_error(f"--png: {args.png} is a directory; give the figure's file name, such as "
                    f"{args.png / 'pong_ppo_1h.png'}")
    text, png = report(args.run_dir, args.png, args.out)
    write_section(args.out, text, *markers)
    print(text)
    print(json.dumps({"figure": str(png)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
