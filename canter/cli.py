"""The ``canter`` command: train (and train --resume), eval, play, list, and the tools tune, plot, benchmark, report.

Bad input exits with code 2 and one line on stderr (``canter: error: ...``), no traceback.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import warnings
from typing import Any

from canter.cli_args import (DEVICE_HELP, ENV_KWARGS_HELP, NULL, _config_file_arg, _flag_value, _Parser, int_arg,
                             with_file_algo)
from canter.cli_list import cmd_list
from canter.cli_parsers import _algo_arg, _resume_parser, _train_parser  # noqa: F401 (tests import them here)
from canter.errors import CanterError, interrupted
from canter.resume_settings import CHANGEABLE


def _import_early(argv: list[str]) -> None:
    """Import the ``imports`` that ``-f FILE`` and ``--set imports=...`` give, before the algorithm is looked up."""
    from canter.config_imports import import_config_imports

    given = next((a for a in argv if a == "--import" or a.startswith("--import=")), None)
    if given is not None:  # canter list's flag: the run's algorithm, named by the module, was an unknown name before
        raise CanterError("canter train has no --import (canter list's flag): a run imports its modules with "
                          "--set imports=[MODULE] or 'imports: [MODULE]' in its -f FILE, which the run records")
    sets = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--set"] + [
        a.split("=", 1)[1] for a in argv if a.startswith("--set=")]
    import_config_imports(_config_file_arg(argv), {}, sets)


def cmd_train(argv: list[str]) -> int:
    """``canter train ALGO --env ENV ...`` or ``canter train --resume RUN_DIR``"""
    if any(a == "--resume" or a.startswith("--resume=") for a in argv):
        return _cmd_resume(argv)
    argv, algo = with_file_algo(argv, _algo_arg(argv))  # canter train -f RUN/config.yaml: the file's algo
    _import_early(argv)  # modules registering the algorithm by name: its hyperparameters become flags
    helping = "-h" in argv or "--help" in argv  # only then are the preset's values looked up
    p = _train_parser("canter train", algo, _flag_value(argv, "--env") if helping else None,
                      strict=algo is not None)  # an unknown algorithm is the error, not its flags
    args = p.parse_args(argv)
    from canter import make_trainer  # torch with it, the garbage collector deferred (canter/__init__.py)

    hparams = {k[4:]: v for k, v in vars(args).items() if k.startswith("hp__") and v is not None}
    run_flags = ("seed", "n_envs", "target_reward", "max_steps", "max_seconds", "eval_episodes", "eval_every",
                 "vectorization", "device", "wandb", "record_every", "explorers", "ray_address", "dataset",
                 "keep_checkpoints", "checkpoint_every", "explorer_timeout")
    overrides = {k: getattr(args, k) for k in run_flags if getattr(args, k) is not None}
    overrides.update({k: None for k, v in overrides.items() if v is NULL})  # --target-reward null: dropped
    if args.env_kwargs is not None:
        overrides["env_kwargs"] = parse_env_kwargs(args.env_kwargs)
    if args.eval_env_kwargs is not None:
        overrides["eval_env_kwargs"] = parse_env_kwargs(args.eval_env_kwargs, "--eval-env-kwargs")
    from canter.api import command_line_values

    with command_line_values():  # a flag's refused null is named null, not Python's None
        trainer = make_trainer(
            args.algo, args.env, config_file=args.config_file, sets=args.sets, run_dir=_run_dir_arg(args.run_dir),
            quiet=args.quiet, hparams=hparams, **overrides,
        )
    return _drive(trainer)


def _cmd_resume(argv: list[str]) -> int:
    args = _resume_parser().parse_args(argv)
    if not args.resume.strip():
        raise CanterError("--resume needs a run directory: canter train --resume RUN_DIR")
    from canter import _import_deferring_gc

    api = _import_deferring_gc("canter.api")  # as make_trainer above
    settings = {k: getattr(args, k) for k in CHANGEABLE if hasattr(args, k)}  # those given (default: SUPPRESS)
    if hasattr(args, "max_seconds"):  # given (--max-seconds null: the saved budget dropped); else it is kept
        settings["max_seconds"] = None if args.max_seconds is NULL else args.max_seconds
    with api.command_line_values():  # its errors name these options, not canter.resume's keywords
        run = api.resume_trainer(args.resume, quiet=args.quiet, max_steps=args.max_steps,
                                 dataset=args.dataset, **settings)
    return _drive(run)


def _drive(trainer: Any) -> int:
    """Run a :class:`~canter.run.Run` to its end and report; Ctrl-C saves the run and exits 130. A Ctrl-C while the envs
    close (the run saved already) exits 130 after the usual report: it was a bare 'interrupted', which left out the
    step the run was saved at and the command that resumes it. SIGTERM is a Ctrl-C throughout, also after the run has
    given back its stop handlers (while it saves its end and its loggers close: a W&B finish takes seconds), where it
    ended the process by its default action (exit -15, no report, the W&B run not finished), or with explorers by
    Ray's (``ray.init`` puts in ``sys.exit``: exit 15)."""
    from canter.stop_grace import sigterm_as_ctrl_c

    with sigterm_as_ctrl_c(over_any=True):  # also over Ray's sys.exit (ray.init, for a run with explorers)
        return _drive_run(trainer)


def _drive_run(trainer: Any) -> int:
    """:func:`_drive`'s body."""
    from canter.errors import notice
    from canter.trainers.guard import TrainingDiverged

    closing_interrupted = False
    try:
        for _ in trainer():
            pass
    except KeyboardInterrupt:
        if getattr(trainer, "divergence", None) is not None:  # a SIGTERM / Ctrl-C while a diverged run closed (its
            # loggers) replaced its TrainingDiverged: it was 'finished (diverged)', exit 130, not the divergence error
            raise _diverged(trainer, trainer.divergence) from None
        if (trainer.summary or {}).get("stop_reason") not in (None, "interrupted") or (
                trainer.summary is not None and getattr(trainer, "interrupted_closing", False)):
            closing_interrupted = True  # after the run's end was saved: the run's report follows (an interrupted one's
            # step and resume command; a first Ctrl-C, then a SIGTERM or Ctrl-C while the loggers close)
        elif (trainer.dir / "checkpoints" / "last.safetensors").is_file():
            notice(f"interrupted; continue with: canter train --resume {shlex.quote(str(trainer.dir))}")
            return 130
        else:  # a new run stopped before its first 'last' (while its loggers started): its directory was removed
            notice("interrupted before training started; nothing was saved")
            return 130
    except TrainingDiverged as exc:
        raise _diverged(trainer, exc) from None
    finally:
        try:
            trainer.close()
        except KeyboardInterrupt:  # the envs left open end with the process (async workers: their pipes close)
            closing_interrupted = True
    s = trainer.summary or {}
    if s.get("stop_reason") == "interrupted":
        notice(f"interrupted at step {s.get('steps', 0):,}; run saved, continue with: canter train --resume "
               f"{shlex.quote(str(trainer.dir))}")
        return 130
    if s.get("target_reward") is None:  # nothing to solve: say why it stopped
        verdict = f"finished ({s.get('stop_reason')})"
    else:
        # a run that missed its target says what stopped it (early stopping, a time budget, a callback)
        verdict = "solved" if s.get("solved") else f"not solved ({s.get('stop_reason')})"
    best = s.get("best_eval_return")
    if trainer.config.get("eval_episodes") == 0:  # nothing was evaluated: the training episodes' return
        rolling = s.get("best_rolling_return")  # none offline: no training episodes either
        best_txt = "no evaluations (eval_episodes 0)" + ("" if rolling is None else
                                                         f", best rolling return {rolling:.2f}")
    else:
        best_txt = "best eval return " + ("n/a" if best is None else f"{best:.2f}")
    print(f"{verdict}: {best_txt} after {s.get('steps', 0):,} steps in {s.get('wall_seconds', 0):.1f}s"
          f" -> {trainer.dir}")
    return 130 if closing_interrupted else 0


def _diverged(trainer: Any, exc: BaseException) -> CanterError:
    """The one-line error of a run that diverged (``exc``), naming the last good checkpoint it keeps."""
    return CanterError(f"{exc}; the last good checkpoint is kept in {trainer.dir / 'checkpoints' / 'last'}")


def parse_env_kwargs(text: str | None, flag: str = "--env-kwargs") -> dict[str, Any]:
    """``--env-kwargs`` (a YAML mapping; ``flag`` names the option) as a dict; {} when not given; anything else is
    a one-line error."""
    if text is None:
        return {}
    from canter.yaml_io import parse_yaml_value

    value = parse_yaml_value(text, flag)
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise CanterError(f"{flag} needs a YAML mapping of argument names to values, e.g. "
                          f"'{{max_episode_steps: 200}}', got {text!r}")
    return value


def _load_for_env(run_dir: str, env_override: str | None, extra_kwargs: dict[str, Any] | None = None,
                  device: str | None = None, evaluation: bool = False, multi_policy: bool = True,
                  ) -> tuple[Any, str, dict]:
    from canter import load  # first: torch with it, the garbage collector deferred (canter/__init__.py)
    from canter.envs import make_vec_env
    from canter.envs.spaces import check_agent_spaces

    if env_override is not None and not env_override.strip():
        raise CanterError("--env needs an env id; leave it out to use the run's own env")
    agent = load(run_dir, device=device)
    env_id = env_override or agent.run_config.env  # the run's own id, given or not: its env as the run built it
    from canter.envs.turns import check_given_opponent

    check_given_opponent(env_id, extra_kwargs)  # else a turn-based game would meet a random opponent, silently
    from canter.envs.make import eval_env_kwargs
    from canter.envs.multiagent import trained_policies

    own = eval_env_kwargs(agent.run_config) if evaluation else agent.run_config.env_kwargs  # eval: the run's eval env
    from canter.envs.opponents import run_env_kwargs

    # the run's own kwargs on its own env; a turn-based game's frozen opponents from the run's copies of them
    env_kwargs = run_env_kwargs(env_id, own if env_id == agent.run_config.env else {}, extra_kwargs, agent.run_dir)
    from canter.held_warnings import unlisted_render_mode_held

    # (a render_mode the env does not list: the env made next warns, or play's one-line error says it)
    with trained_policies(multi_policy), unlisted_render_mode_held(keep=False):  # a policy mode that does not fit:
        # no --set policies here (multi_policy: the command acts with a multi-policy run, which collect does not)
        probe = make_vec_env(env_id, 1, "sync", env_kwargs, policies=agent.run_config.policies,
                             central_state=agent.run_config.central_state)
    try:
        check_agent_spaces(agent, env_id, probe.single_observation_space, probe.single_action_space)
    finally:
        probe.close()
    return agent, env_id, env_kwargs


def _check_episodes_and_seed(args: argparse.Namespace) -> None:
    if args.episodes < 1:
        raise CanterError(f"--episodes must be >= 1, got {args.episodes}")
    if not 0 <= args.seed < 2**32:
        raise CanterError(f"--seed must be between 0 and 2**32 - 1, got {args.seed}")


def cmd_eval(argv: list[str]) -> int:
    """``canter eval RUN_DIR [--episodes N] [--json]``"""
    p = _Parser(prog="canter eval", description="Evaluate the policy of a run (deterministic, or stochastic where "
                "the run evaluated so: eval_deterministic false, the Atari presets).")
    p.add_argument("run_dir", help="run directory or checkpoint")
    p.add_argument("--episodes", type=int_arg, default=10, help="episodes to run (default 10)")
    p.add_argument("--env", help="evaluate on another env id with the same spaces")
    p.add_argument("--env-kwargs", dest="env_kwargs", help=ENV_KWARGS_HELP)
    p.add_argument("--seed", type=int_arg, default=12345, help="evaluation seed (default 12345)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--device", help=DEVICE_HELP)
    p.add_argument("--opponent", help="turn-based games: play against this opponent (random or a run directory)")
    p.add_argument("--seat", help="turn-based games: play this seat (random or an agent name)")
    _add_policy_flags(p, "evaluate")
    args = p.parse_args(argv)
    _check_episodes_and_seed(args)
    given = parse_env_kwargs(args.env_kwargs)
    from canter import load  # noqa: F401 - first: torch imported as canter/__init__.py does it (NumPy on its own)
    from canter.api import find_checkpoint
    # the checkpoint, once: a run still training may save its first best while this one is evaluated
    checkpoint = find_checkpoint(args.run_dir)
    agent, env_id, _ = _load_for_env(str(checkpoint), args.env, given, args.device, True)  # evaluation: its eval env
    from canter.envs.turns import with_opponent
    from canter.trainers.evaluation import evaluate_agent

    # the caller's kwargs only: canter.evaluate adds the run's own (a self-play run's 'opponent: self' among them)
    given = with_opponent(env_id, given or {}, args.opponent, args.seat)
    # the run's evaluations' env copies, so the same seed gives the same episodes (canter.evaluate)
    result = evaluate_agent(agent, env_id, args.episodes, args.seed, given, deterministic=args.deterministic)
    if args.json:
        meta = getattr(agent, "metadata", {}) or {}

        def number(x: float) -> float | None:  # NaN / inf (a diverged policy) are not JSON: null, as JSON.stringify
            return x if math.isfinite(x) else None

        print(json.dumps({"env": env_id, "mean_return": number(result.mean_return),
                          "std_return": number(result.std_return), "episodes": result.episodes,
                          "returns": [number(r) for r in result.returns], "lengths": result.lengths,
                          "checkpoint": str(checkpoint), "algorithm": meta.get("algorithm"),
                          "step": meta.get("step"), "seed": args.seed, "deterministic": result.deterministic,
                          **({} if result.success_rate is None else {"success_rate": result.success_rate})},
                         allow_nan=False))
    else:
        print(f"{env_id}: mean return {result.describe()}")
    return 0


def cmd_play(argv: list[str]) -> int:
    """``canter play RUN_DIR [--episodes N] [--render] [--video-dir DIR]``"""
    p = _Parser(prog="canter play", description="Watch or record a trained agent.")
    p.add_argument("run_dir", help="run directory or checkpoint")
    p.add_argument("--episodes", type=int_arg, default=1, help="episodes to play (default 1)")
    p.add_argument("--env", help="play on another env id with the same spaces")
    p.add_argument("--env-kwargs", dest="env_kwargs", help=ENV_KWARGS_HELP)
    p.add_argument("--render", action="store_true", help="open a window (render_mode human)")
    p.add_argument("--video-dir", dest="video_dir", help="record mp4 videos here (needs the 'video' extra)")
    p.add_argument("--seed", type=int_arg, default=0, help="episode seed (default 0)")
    p.add_argument("--device", help=DEVICE_HELP)
    _add_policy_flags(p, "play")
    args = p.parse_args(argv)
    _check_episodes_and_seed(args)
    if args.video_dir is not None and not args.video_dir.strip():
        raise CanterError("--video-dir needs a directory path; leave it out to play without recording")
    if args.video_dir is not None and os.path.exists(args.video_dir) and not os.path.isdir(args.video_dir):
        raise CanterError(f"--video-dir '{args.video_dir}' is a file, not a directory")
    given = parse_env_kwargs(args.env_kwargs)
    agent, env_id, _ = _load_for_env(args.run_dir, args.env, given, args.device)
    from canter.play import play

    def show(i: int, r: float) -> None:  # as each episode ends: a Ctrl-C keeps the lines of the finished ones
        video = os.path.join(args.video_dir, f"play-episode-{i}.mp4") if args.video_dir else None
        shown = f" ({video})" if video and os.path.exists(video) else ""  # gymnasium numbers its files from 0
        print(f"episode {i + 1}: return {r:.2f}{shown}", flush=True)

    # the caller's kwargs only: play merges them over the run's own (a self-play run's 'opponent: self' among them)
    play(agent, env_id, args.episodes, render=args.render, video_dir=args.video_dir, seed=args.seed,
         env_kwargs=given, on_episode=show, deterministic=args.deterministic)
    return 0


def _add_policy_flags(p: argparse.ArgumentParser, verb: str) -> None:
    """``--deterministic`` / ``--stochastic`` (``args.deterministic``; None: the run's ``eval_deterministic``)."""
    group = p.add_mutually_exclusive_group()
    group.add_argument("--deterministic", action="store_const", const=True, default=None,
                       help=f"{verb} with the deterministic policy (default: as the run's evaluations, its "
                            "eval_deterministic)")
    group.add_argument("--stochastic", dest="deterministic", action="store_const", const=False,
                       help=f"{verb} with the policy's samples, seeded by --seed (default for a run with "
                            "eval_deterministic false, as the Atari presets set it)")


def _run_dir_arg(run_dir: str | None) -> str:
    """``--run-dir`` (``auto`` when not given); an empty path is refused."""
    if run_dir is None:
        return "auto"
    if not run_dir.strip():
        raise CanterError("--run-dir needs a directory path, got ''; leave it out for runs/<algo>-<env>-<time>")
    return run_dir


def _tool(name: str) -> Any:
    """A subcommand implemented in :mod:`canter.tools.commands` (imported when used)."""

    def run(argv: list[str]) -> int:
        from canter.tools.commands import COMMANDS as TOOLS

        return TOOLS[name](argv)

    return run


COMMANDS = {"train": cmd_train, "eval": cmd_eval, "play": cmd_play, "collect": _tool("collect"), "list": cmd_list,
            **{name: _tool(name) for name in ("tune", "plot", "benchmark", "report")}}


def _show_warning(message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
    """Print canter's own warnings as one line; leave the others to Python's default format."""
    from canter.errors import CanterWarning

    if issubclass(category, CanterWarning):
        print(f"canter: warning: {message}", file=sys.stderr)
    else:
        _default_showwarning(message, category, filename, lineno, file, line)


_default_showwarning = warnings.showwarning


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    warnings.showwarning = _show_warning
    for stream in (sys.stdout, sys.stderr):  # an ASCII terminal gets "\\xb1" for "±" (as rich prints), not a traceback
        if hasattr(stream, "reconfigure") and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print("canter: error: no command given; choose from " + ", ".join(COMMANDS) + " (canter --help)",
              file=sys.stderr)
        return 2
    try:  # the usage and version lines too: piped into `head`, a closed pipe was a BrokenPipeError traceback
        if argv[0] in ("-h", "--help"):
            print("usage: canter {train,eval,play,collect,list,tune,plot,benchmark,report} ...\n\n"
                  "  train ALGO --env ENV   train an agent (canter train ppo --help for options)\n"
                  "  train --resume RUN_DIR continue a stopped run exactly where it was saved\n"
                  "  eval RUN_DIR           evaluate a trained agent\n"
                  "  play RUN_DIR           watch or record a trained agent\n"
                  "  collect [RUN_DIR]      write a dataset for offline training (bc, cql, td3bc)\n"
                  "  list                   registered algorithms, models and presets (--import MODULE: a user's too)\n"
                  "  tune ALGO --env ENV    tune hyperparameters with Optuna, write best.yaml\n"
                  "  plot RUN_DIR...        learning curves, seeds averaged with a band\n"
                  "  benchmark FILE.yaml    algorithms x envs x seeds: results table and figure\n"
                  "  report RUN_DIR         a self-contained report.html for a run")
            return 0
        if argv[0] in ("-V", "--version"):
            from canter import __version__

            print(f"canter {__version__}")
            return 0
        cmd = COMMANDS.get(argv[0])
        if cmd is None and argv[0] in ("help", "-help"):  # was "unknown command 'help'; did you mean 'eval'?"
            raise CanterError(f"'{argv[0]}' is no command: canter --help lists the commands, canter COMMAND --help "
                              "(canter train ppo --help) a command's options")
        if cmd is None:
            from canter.errors import unknown

            raise unknown("command", argv[0], COMMANDS)
        return cmd(argv[1:])
    except CanterError as exc:
        print("canter: error: " + " ".join(str(exc).split()), file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # one that no command handled: while canter's modules import, say
        return interrupted()
    except BrokenPipeError:  # output piped into e.g. `head`; any other pipe (an env's simulator) is an error
        from canter.utils import stdout_gone

        if not stdout_gone():
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # a path given on the command line that cannot be read or written
        if exc.filename is None:
            raise
        where = exc.filename2 if exc.filename2 is not None else exc.filename
        print(f"canter: error: {exc.strerror or exc}: '{os.fsdecode(where)}'", file=sys.stderr)
        return 2


def entry() -> None:
    """The ``canter`` console script (and ``python -m canter``): :func:`main`, then a fast exit.

    Importing this module is cheap: torch imports when a command needs it (``--help`` and argument
    errors do not), so a Ctrl-C while it imports gets one line and exit code 130, not a traceback.

    Every file the command wrote is closed (and fsynced where it matters) before ``main`` returns,
    so the interpreter's teardown (unloading torch, pyarrow and their thread pools: 0.4-0.8 s
    measured here) does no useful work; ``os._exit`` skips it after flushing the standard streams.
    Runs that used W&B exit normally so its own exit handlers run.

    The objects that canter's imports create (torch's, mostly) live as long as the process: ``gc.freeze``
    after those imports moves them out of the garbage collector's way, so its full passes skip them.
    The working directory joins the end of ``sys.path``, as ``python -m`` puts it at the start.
    """
    try:
        import canter

        canter._freeze_imports = True
        # `module:Name` parts (an env, a model, a hook) from the working directory import as under
        # `python -m canter`; appended, so a local file never shadows an installed package
        if os.getcwd() not in sys.path:
            sys.path.append(os.getcwd())
        code = main()
    except KeyboardInterrupt:  # outside the command (its usage line, its exit)
        code = interrupted()
    if "wandb" in sys.modules:
        raise SystemExit(code)
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # a stream closed when the process started (`canter train ... >&-`): Python's is None
            continue
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


if __name__ == "__main__":  # ``python -m canter.cli`` as ``python -m canter``
    entry()
