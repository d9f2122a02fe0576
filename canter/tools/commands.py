"""Argument parsing for ``canter tune|plot|benchmark|report|collect`` (the logic lives in the tool modules)."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from canter.errors import CanterError

RUN_KEYS = ("seed", "n_envs", "max_steps", "target_reward", "eval_every", "eval_episodes", "dataset")


def _parser(prog: str, description: str) -> argparse.ArgumentParser:
    from canter.cli_args import _Parser

    return _Parser(prog=prog, description=description)


def _trial_flags(p: argparse.ArgumentParser) -> None:
    from canter.cli_args import ConfigFileAction, int_arg, number_or_null_arg

    p.add_argument("--env", help="Gymnasium environment id, e.g. CartPole-v1")
    p.add_argument("-f", "--config", dest="config_file", action=ConfigFileAction,
                   help="base run config YAML for every trial")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="fix a config key or hyperparameter for every trial (repeatable)")
    p.add_argument("--seed", type=int_arg, help="seed of every trial (default 0)")
    p.add_argument("--n-envs", type=int_arg, dest="n_envs", help="parallel environments")
    p.add_argument("--max-steps", type=int_arg, dest="max_steps", help="step budget of each trial (env steps; gradient "
                   "updates for an offline algorithm: bc, cql, td3bc)")
    p.add_argument("--target-reward", type=number_or_null_arg, dest="target_reward", metavar="R|null",
                   help="stop a trial at this evaluation return (null: none, a preset's dropped)")
    p.add_argument("--eval-every", type=int_arg, dest="eval_every", help="evaluate every N steps (the pruning points)")
    p.add_argument("--eval-episodes", type=int_arg, dest="eval_episodes", help="episodes per evaluation")
    p.add_argument("--dataset", help="offline algorithms (bc, cql, td3bc): dataset written by canter collect")


def _refuse_empty(args: argparse.Namespace, *flags: str) -> None:
    """A one-line error for a flag given as '' (``--out ''`` would otherwise mean the current directory,
    ``--study ''`` and ``--storage ''`` the defaults)."""
    for flag in flags:
        value = getattr(args, flag.lstrip("-").replace("-", "_"))
        if value is not None and not value.strip():
            raise CanterError(f"{flag} needs a value, got ''; leave it out for the default")


def _dash_values(p: argparse.ArgumentParser, argv: list[str], flags: tuple[str, ...]) -> list[str]:
    """``argv`` with ``--size -5x100`` joined into ``--size=-5x100`` for each of ``flags``: argparse takes a
    value that starts with '-' and is not a plain number for an option, so the flag got only "expected one
    argument" instead of canter's own check of the value. A next token that is one of ``p``'s options stays
    one (``--size --out x.png`` is a missing value)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            return out + argv[i:]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if (token in flags and nxt is not None and nxt.startswith("-") and nxt != "--"
                and nxt.split("=", 1)[0] not in p._option_string_actions):
            out.append(f"{token}={nxt}")
            i += 2
        else:
            out.append(token)
            i += 1
    return out


def _label_values(p: argparse.ArgumentParser, argv: list[str], flag: str = "--label") -> list[str]:
    """``argv`` with each value after ``flag`` (a ``nargs='+'`` option) given as ``flag=VALUE``, so that a value
    starting with a single '-' (``--label -x``, ``--label base -tuned``) is a label: argparse took it for an
    option ("expected at least one argument", "unrecognized arguments: -tuned"). The values end at ``--``, one of
    ``p``'s options or any token starting with '--' (a misspelt option stays one; a label starting with '--'
    goes as ``--label=--x``)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            return out + argv[i:]
        out.append(token)
        i += 1
        if token != flag:
            continue
        while (i < len(argv) and argv[i] != "--" and not argv[i].startswith("--")
               and argv[i].split("=", 1)[0] not in p._option_string_actions):
            if out[-1] == flag:
                out.pop()  # at least one value: each goes as flag=VALUE (the flag alone is argparse's error)
            out.append(f"{flag}={argv[i]}")
            i += 1
    return out


def _run_overrides(args: argparse.Namespace) -> dict[str, Any]:
    from canter.cli_args import NULL

    given = {k: getattr(args, k) for k in RUN_KEYS if getattr(args, k, None) is not None}
    return {k: None if v is NULL else v for k, v in given.items()}  # --target-reward null: the preset's dropped


def _parse_naming_algo(p: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``p.parse_args(argv)``; where it fails, the error is given again with the algorithm the arguments name
    (positional, else the ``-f`` file's) as ``p.algo``, so that an unknown flag is answered as ``canter train
    ALGO`` answers it: one of its hyperparameters is ``--set gamma=VALUE``, another algorithm's (``--tau`` for
    ppo) names the algorithms that have it. Without it, ``--tau`` was answered '--study' or '--trials' and
    ``--gamma`` '--dataset'."""
    try:
        return p.parse_args(argv)
    except CanterError as error:
        first = error
    if "-h" in argv or "--help" in argv or getattr(p, "algo", None) is not None:
        raise first
    from canter.builtins import algorithm_name
    from canter.cli_args import file_algo

    try:
        known, _ = p.parse_known_args(argv)
    except CanterError:
        raise first from None
    def named(algo: Any) -> str | None:
        try:
            return algorithm_name(algo) if algo else None
        except CanterError:
            return None

    # the positional, else the -f file's ('-f best.yaml --tau 3' takes 3 for the positional)
    p.algo = named(known.algo)  # type: ignore[attr-defined]
    if p.algo is None and known.config_file:  # type: ignore[attr-defined]
        try:
            p.algo = named(file_algo(known.config_file, str(p.prog)))  # type: ignore[attr-defined]
        except CanterError:
            pass
    if p.algo is None:  # type: ignore[attr-defined]
        raise first
    return p.parse_args(argv)


def cmd_tune(argv: list[str]) -> int:
    """``canter tune ALGO --env ENV --trials N ...``"""
    p = _parser("canter tune", "Tune hyperparameters with Optuna (TPE sampler, median pruning).")
    from canter.cli_args import int_arg

    p.add_argument("algo", nargs="?", help="algorithm (see 'canter list'; default: the -f file's algo)")
    p.add_argument("--trials", type=int_arg, default=20, help="finished trials wanted in the study (default 20)")
    p.add_argument("--out", help="output directory (default runs/tune-ALGO-ENV)")
    p.add_argument("--timeout", type=float, help="stop starting trials after this many seconds")
    p.add_argument("--jobs", type=int_arg, default=1,
                   help="parallel worker processes, one torch thread each (default 1)")
    p.add_argument("--storage", help="Optuna storage URL (default sqlite:///OUT/study.db)")
    p.add_argument("--study", help="study name (default ALGO-ENV); same storage and name resume the study")
    p.add_argument("--space", dest="space_file", help="YAML overriding the declared search space (name: null drops one)")
    p.add_argument("--no-prune", dest="prune", action="store_false", help="do not prune trials")
    p.add_argument("--prune-startup", type=int_arg, default=5, help="complete trials before pruning starts (default 5)")
    p.add_argument("--prune-warmup", type=int_arg, default=1, help="evaluations a trial always gets (default 1)")
    p.add_argument("--sampler-seed", type=int_arg, default=0, help="TPE sampler seed (default 0)")
    p.add_argument("--quiet", action="store_true", help="no per-trial log lines")
    _trial_flags(p)
    from canter.cli_parsers import _with_defaults

    _with_defaults(p, None)  # the trial flags' run defaults, as canter train --help states them
    p.epilog = "Run defaults are canter train's; a shipped preset for the env (canter list) overrides some of them."
    args = _parse_naming_algo(p, argv)
    if args.algo is None:  # canter tune -f best.yaml (or a run's config.yaml): the file's algorithm, as train takes it
        if not args.config_file:
            p.error("the following arguments are required: algo")
        from canter.cli_args import file_algo

        args.algo = file_algo(args.config_file, "canter tune")
    _refuse_empty(args, "--out", "--storage", "--study")
    from canter.tools.tune import tune

    try:
        result = tune(args.algo, args.env, args.trials, out=args.out, timeout=args.timeout, jobs=args.jobs,
                      storage=args.storage, study=args.study, space_file=args.space_file,
                      config_file=args.config_file, sets=args.sets, prune=args.prune,
                      prune_startup=args.prune_startup, prune_warmup=args.prune_warmup,
                      sampler_seed=args.sampler_seed, quiet=args.quiet, **_run_overrides(args))
    except KeyboardInterrupt as exc:
        if getattr(exc, "result", None) is not None:  # the best so far, written
            _print_result(exc.result)
        print("interrupted; the study keeps its finished trials (the interrupted one is marked failed): run the same "
              "command again to continue it", file=sys.stderr)
        return 130
    _print_result(result)
    return 0


def _print_result(result: Any) -> None:
    """The study's counts, its best trial and the files written (a :class:`canter.tools.tune.TuneResult`)."""
    c = result.counts
    # a trial still RUNNING (another process's on the storage, or a killed run's: failed after Optuna's 3-minute
    # grace) or WAITING (enqueued, not run yet: the study had its --trials first), as trials.csv shows them
    running = "".join(f", {c[state]} {state}" for state in ("running", "waiting") if c.get(state))
    print(f"study '{result.study_name}': {c['complete']} complete, {c['pruned']} pruned, {c['fail']} failed{running} "
          "trials")
    print(f"best trial {result.best_trial}: last evaluation return {result.best_value:.2f}")
    for k, v in result.best_params.items():
        print(f"  {k}: {'null' if v is None else v}")
    print("wrote " + ", ".join(str(f) for f in result.files.values()))


def cmd_plot(argv: list[str]) -> int:
    """``canter plot RUN_DIR... [--x steps|time] [--label L ...] [--out FILE] [--size WxH] [--policy NAME ...]``"""
    p = _parser("canter plot", "Plot learning curves; runs with the same label are averaged with a band.")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories")
    p.add_argument("--x", default="steps", choices=("steps", "time"), help="x axis (default steps)")
    p.add_argument("--label", nargs="+", action="extend", dest="labels",
                   help="one label per run dir, in order (same label = one group); repeated flags add up")
    p.add_argument("--out", default="curves.png", help="output image: .png, .svg or .pdf (default curves.png)")
    p.add_argument("--size", default="800x500", help="image size in pixels, WIDTHxHEIGHT (default 800x500)")
    p.add_argument("--title", help="plot title (default: the env ids)")
    p.add_argument("--policy", action="append", dest="policies", metavar="NAME",
                   help="a run of several policies: draw this policy's curve (repeat for more; default: every policy)")
    args = p.parse_args(_label_values(p, _dash_values(p, list(argv), ("--size", "--title"))))
    _refuse_empty(args, "--out")  # Path('') is '.': "unknown image format '(none)'"
    from canter.tools.plot import parse_size, plot_runs

    path = plot_runs(args.run_dirs, x=args.x, labels=args.labels, out=args.out, size=parse_size(args.size),
                     title=args.title, policies=args.policies)
    print(f"wrote {path}")
    return 0


def cmd_benchmark(argv: list[str]) -> int:
    """``canter benchmark FILE.yaml [--out DIR] [--jobs J]``"""
    p = _parser("canter benchmark", "Run algorithms x environments x seeds; write a results table and a figure.")
    from canter.cli_args import int_arg

    p.add_argument("file", help="benchmark YAML (e.g. benchmarks/classic.yaml)")
    p.add_argument("--out", help="output directory (default runs/benchmark-<file stem>)")
    p.add_argument("--jobs", type=int_arg, default=1, help="runs in parallel, one torch thread each (default 1)")
    p.add_argument("--quiet", action="store_true", help="no line per finished run")
    args = p.parse_args(argv)
    _refuse_empty(args, "--out")
    from canter import _import_deferring_gc

    benchmark = _import_deferring_gc("canter.tools.benchmark").benchmark  # torch with it

    try:
        result = benchmark(args.file, out=args.out, jobs=args.jobs, quiet=args.quiet)
    except KeyboardInterrupt:
        print("interrupted; no results written: run the same command again to continue (finished runs are reused, "
              "the interrupted one starts again)", file=sys.stderr)
        return 130
    print(result.markdown)
    print("wrote " + ", ".join(str(f) for f in result.files.values()))
    return 0


def cmd_report(argv: list[str]) -> int:
    """``canter report RUN_DIR [--out FILE] [--eval-episodes N]``"""
    p = _parser("canter report", "Write a self-contained report.html for a run.")
    from canter.cli_args import int_arg

    p.add_argument("run_dir", help="run directory")
    p.add_argument("--out", help="output file (default RUN_DIR/report.html)")
    p.add_argument("--eval-episodes", type=int_arg, default=20, dest="eval_episodes",
                   help="episodes of the best checkpoint for the return distribution (0: skip; default 20)")
    args = p.parse_args(argv)
    _refuse_empty(args, "--out")  # Path('') is '.': "--out '.' is a directory", a path not given
    from canter import _import_deferring_gc

    write_report = _import_deferring_gc("canter.tools.report").write_report  # torch with it

    print(f"wrote {write_report(args.run_dir, out=args.out, eval_episodes=args.eval_episodes)}")
    return 0


def cmd_collect(argv: list[str]) -> int:
    """``canter collect`` (:mod:`canter.tools.collect`)."""
    from canter.tools.collect import cmd_collect as run

    return run(argv)


COMMANDS = {"tune": cmd_tune, "plot": cmd_plot, "benchmark": cmd_benchmark, "report": cmd_report,
            "collect": cmd_collect}
