"""The parsers of ``canter train`` and ``canter train --resume``: the run flags, the algorithm's hyperparameters
as flags (with the values an env's preset sets, under ``--help``) and the settings a resume may change."""
from __future__ import annotations

import argparse

from canter.cli_args import (OFFLINE_RUN_HELP, ConfigFileAction, ResumeParser, _Parser, int_arg,
                             number_or_null_arg, preset_values)
from canter.errors import CanterError
from canter.resume_settings import address_arg, keep_arg, seconds_arg


def _add_run_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--env", help="Gymnasium environment id, e.g. CartPole-v1")
    p.add_argument("--env-kwargs", dest="env_kwargs", help="env constructor arguments as a YAML mapping, e.g. "
                   "'{max_episode_steps: 200}' (as --set env_kwargs=...)")
    p.add_argument("--eval-env-kwargs", dest="eval_env_kwargs", help="the evaluation env's own arguments, merged "
                   "over --env-kwargs, as a YAML mapping (as --set eval_env_kwargs=...)")
    p.add_argument("--seed", type=int_arg, help="random seed (default 0)")
    p.add_argument("--n-envs", type=int_arg, dest="n_envs", help="parallel environments")
    p.add_argument("--target-reward", type=number_or_null_arg, dest="target_reward", metavar="R|null",
                   help="stop at this mean evaluation return")
    p.add_argument("--max-steps", type=int_arg, dest="max_steps", help="environment-step budget")
    p.add_argument("--max-seconds", type=number_or_null_arg, dest="max_seconds", metavar="S|null",
                   help="wall-clock budget in seconds")
    p.add_argument("--eval-episodes", type=int_arg, dest="eval_episodes",
                   help="episodes per evaluation (0: no evaluation at all)")
    p.add_argument("--eval-every", type=int_arg, dest="eval_every", help="evaluate every N env steps")
    p.add_argument("--keep-checkpoints", type=int_arg, dest="keep_checkpoints", metavar="K",
                   help="keep only the newest K periodic checkpoints (step-N, saved every checkpoint_every steps); "
                        "best and last are always kept (default: keep all)")
    p.add_argument("--checkpoint-every", type=int_arg, dest="checkpoint_every", metavar="N",
                   help="save a periodic checkpoint (step-N) every N env steps (default 50000; 0: none)")
    p.add_argument("--record-every", type=int_arg, dest="record_every",
                   help="record an evaluation episode as MP4 in RUN_DIR/videos every N steps (needs the 'video' extra)")
    p.add_argument("--dataset", help="offline algorithms (bc, cql, td3bc): dataset written by canter collect")
    p.add_argument("--explorers", type=int_arg, help="run N explorer actors on Ray (needs the 'distributed' extra)")
    p.add_argument("--ray-address", dest="ray_address", help="join this Ray cluster ('auto' or host:port)")
    p.add_argument("--explorer-timeout", type=seconds_arg, dest="explorer_timeout", metavar="SECONDS",
                   help="replace a Ray explorer that returns no rollout within SECONDS (default null: 10x the slowest "
                        "rollout so far, at least 60 s; 0: wait forever)")
    p.add_argument("--vectorization", choices=("auto", "native", "sync", "async"), help="how to vectorise the env")
    p.add_argument("--device", help="torch device to train on: cpu (default), cuda, cuda:N or auto (cuda if available)")
    p.add_argument("--run-dir", dest="run_dir", help="where to write the run (default runs/<algo>-<env>-<time>-<sha>)")
    p.add_argument("-f", "--config", dest="config_file", action=ConfigFileAction, help="run config YAML")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override any config key or hyperparameter (repeatable)")
    p.add_argument("--wandb", action="store_const", const=True, default=None, help="also log to Weights & Biases")
    p.add_argument("--quiet", action="store_true", help="no progress display")


def _train_parser(prog: str, algo: str | None, env: str | None = None, strict: bool = False) -> _Parser:
    """The parser of ``canter train``, with ``algo``'s hyperparameters as flags. An algorithm that cannot be
    found leaves them out (the training that follows reports it), or, with ``strict`` (``--help`` after the
    algorithm's name), is the error."""
    from canter.builtins import algorithm_info, algorithm_name
    from canter.config import RunConfig, describe

    p = _Parser(prog=prog, description="Train an agent and write a run directory.",
                epilog="Hyperparameter defaults are the algorithm's own; a shipped preset for the env (canter list) "
                       "overrides some of them.\n" + (f"Values marked 'with --env {env}' are the ones its preset sets."
                                                      if env else "Give --env with --help to see the values the preset uses."),
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("algo", help="algorithm (see 'canter list')")
    p.add_argument("--resume", metavar="RUN_DIR",
                   help="continue a stopped run instead (canter train --resume RUN_DIR [--max-steps N] "
                        "[--max-seconds S|null] [--dataset PATH] [--keep-checkpoints K] [--checkpoint-every N] "
                        "[--wandb | --no-wandb] [--explorer-timeout SECONDS] [--ray-address ADDRESS] [--quiet])")
    _add_run_flags(p)
    if algo is not None and not algo.startswith("-"):
        try:  # canter's own algorithms are described without torch, with the env's presets too
            info = algorithm_info(algo)
        except CanterError:
            if strict:  # else a misspelt name or a user module that fails to import gave help without a word
                raise
            return _with_defaults(p, None)
        p.algo = algorithm_name(algo)  # an unknown flag that is another algorithm's hyperparameter is named so
        group = p.add_argument_group(f"{info['title']} hyperparameters (also settable as --set KEY=VALUE)")
        run_preset, preset = preset_values(algo, env, info)  # ({}, {}) without an env
        run_defaults = {name: default for name, _, default, _ in describe(RunConfig)}
        run_defaults["n_envs"] = info.get("default_n_envs")  # null: the algorithm's
        for action in p._actions:  # the run values the env's preset sets (n_envs 16, target_reward 475, ...)
            if info.get("family") == "offline":  # its steps are gradient updates
                action.help = OFFLINE_RUN_HELP.get(action.dest, action.help)
            value = run_preset.get(action.dest)
            if action.dest not in ("algo", "env", "dataset") and value is not None and value != run_defaults.get(
                    action.dest):
                action.help = f"{action.help} (with --env {env}: {value})"
        for name, metavar, doc, default in info["hparams"]:
            used = f"; with --env {env}: {preset[name]}" if name in preset and f"{preset[name]}" != default else ""
            group.add_argument(f"--{name.replace('_', '-')}", dest=f"hp__{name}", metavar=metavar,
                               help=f"{doc} (default: {default}{used})")
        return _with_defaults(p, info)
    return _with_defaults(p, None)


#: run flags whose help gives RunConfig's default (where an env's preset sets none): '--max-steps
#: environment-step budget' did not say it is 100000, nor '--eval-every' 10000
SHOWN_DEFAULTS = ("n_envs", "max_steps", "max_seconds", "target_reward", "eval_episodes", "eval_every",
                  "record_every", "vectorization")


def _with_defaults(p: _Parser, info: dict | None) -> _Parser:
    """``p`` with RunConfig's default added to each :data:`SHOWN_DEFAULTS` flag's help that neither states one
    nor shows a preset's value (``n_envs``: the algorithm's, from ``info``)."""
    from canter.config import RunConfig, describe

    defaults = {name: default for name, _, default, _ in describe(RunConfig)}
    for action in p._actions:
        if action.dest not in SHOWN_DEFAULTS or "default" in action.help or "with --env" in action.help:
            continue
        value = defaults[action.dest]
        if action.dest == "n_envs":
            if info and info.get("family") == "offline":  # unused there, and its help says so
                continue
            value = info.get("default_n_envs") if info else None
            shown = f"default: {value}, the algorithm's" if value else "default: the algorithm's"
        else:
            shown = "default: none" if value is None else "default 0: never" if value == 0 else f"default {value}"
        help_ = action.help
        action.help = f"{help_[:-1]}; {shown})" if help_.endswith(")") else f"{help_} ({shown})"
    return p


def _algo_arg(argv: list[str]) -> str | None:
    """The algorithm ``canter train``'s arguments name: the first word that is neither a flag nor a flag's
    value (``--env CartPole-v1 ppo``, ``--set imports=[my_pkg] NAME``, ``--lr 0.001 ppo``), as argparse will
    read it. A flag that is not a run flag is one of the algorithm's hyperparameters, which all take a value."""
    no_value = {s for a in _train_parser("canter train", None)._actions if a.option_strings and a.nargs == 0
                for s in a.option_strings}
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a.startswith("-"):
            skip = a not in no_value and "=" not in a and (a.startswith("--") or len(a) == 2)  # -fFILE: attached
        else:
            return a
    return None


def _resume_parser() -> ResumeParser:
    """The parser of ``canter train --resume RUN_DIR``: the options a resume takes."""
    p = ResumeParser(prog="canter train", description=(
        "Continue a stopped run exactly where its last checkpoint is, with its saved config: only the budgets, a "
        "moved dataset and the settings that change nothing it learns (checkpoints kept and saved, W&B, "
        "the Ray explorers' timeout) may change; "
        "the run keeps them from then on."))
    p.add_argument("--resume", required=True, metavar="RUN_DIR", help="run directory to continue")
    p.add_argument("--max-steps", type=int_arg, dest="max_steps", help="new step budget (extends a finished run)")
    p.add_argument("--max-seconds", type=number_or_null_arg, dest="max_seconds", metavar="S|null",
                   default=argparse.SUPPRESS, help="new wall-clock budget (null: none, the saved one dropped)")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.add_argument("--dataset", help="offline runs: the run's dataset at its new path (moved; checked to be the same)")
    # what changes no learning (canter/resume_settings.py): kept by the run's config from then on
    p.add_argument("--keep-checkpoints", type=keep_arg, dest="keep_checkpoints", metavar="K",
                   default=argparse.SUPPRESS,
                   help="keep only the newest K periodic checkpoints from now on ('all': keep every one)")
    p.add_argument("--checkpoint-every", type=int_arg, dest="checkpoint_every", metavar="N",
                   default=argparse.SUPPRESS, help="save a periodic checkpoint every N steps from now on (0: none)")
    p.add_argument("--wandb", action=argparse.BooleanOptionalAction, default=argparse.SUPPRESS,
                   help="log to Weights & Biases from now on (--no-wandb: stop)")
    p.add_argument("--explorer-timeout", type=seconds_arg, dest="explorer_timeout", metavar="SECONDS",
                   default=argparse.SUPPRESS, help="replace a Ray explorer that returns no rollout within SECONDS "
                                                   "from now on (null: automatic; 0: wait forever)")
    p.add_argument("--ray-address", type=address_arg, dest="ray_address", metavar="ADDRESS",
                   default=argparse.SUPPRESS, help="run the explorers on this Ray cluster from now on ('auto' or "
                                                   "host:port; null: a private local Ray)")
    return p
