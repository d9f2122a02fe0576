"""``canter collect``: write a dataset of transitions for offline training (:mod:`canter.data.dataset`)."""
from __future__ import annotations

import argparse
import os
from typing import Any

from canter.errors import CanterError, check_utf8_path


def _collect_parser() -> argparse.ArgumentParser:
    from canter.cli import ENV_KWARGS_HELP, _Parser, int_arg

    p = _Parser(prog="canter collect", description="Write a dataset of transitions for offline training (bc, cql, "
                "td3bc): a run's deterministic policy, each action random with probability --epsilon, a uniform "
                "random policy when no run is given, or (--from-replay) the replay buffer an off-policy run saved.")
    p.add_argument("run_dir", nargs="?", help="run directory or checkpoint whose policy acts (default: random actions)")
    p.add_argument("--out", required=True, help="dataset path; writes PATH.safetensors and PATH.json (minari:ID: a "
                   "local Minari dataset, the complete episodes; needs the 'offline' extra)")
    p.add_argument("--env", help="env id (default: the run's env; required without a run)")
    p.add_argument("--env-kwargs", dest="env_kwargs", help=ENV_KWARGS_HELP)
    p.add_argument("--transitions", type=int_arg, help="transitions to collect (default 50000)")
    p.add_argument("--epsilon", type=float, help="probability of a random action instead of the policy's (default 0)")
    p.add_argument("--seed", type=int_arg, help="seed of the env and the random actions (default 0)")
    p.add_argument("--from-replay", dest="from_replay", action="store_true",
                   help="write the replay buffer an off-policy run saved (checkpoints/last) instead of running a policy")
    return p


def _check_collect_args(args: argparse.Namespace) -> None:
    """One-line errors for bad ``canter collect`` arguments; fills in the defaults."""
    if args.from_replay:
        given = [f for f, v in (("--env", args.env), ("--env-kwargs", args.env_kwargs), ("--transitions", args.transitions),
                                ("--epsilon", args.epsilon), ("--seed", args.seed)) if v is not None]
        if args.run_dir is None or given:
            raise CanterError("--from-replay takes a run directory and --out only" + (
                f"; drop {', '.join(given)}" if given else ": canter collect RUN_DIR --from-replay --out PATH"))
    elif args.run_dir is None and not args.env:
        raise CanterError("give a run directory whose policy acts, or --env ENV for uniform random actions")
    args.transitions = 50_000 if args.transitions is None else args.transitions
    args.epsilon = 0.0 if args.epsilon is None else args.epsilon
    args.seed = 0 if args.seed is None else args.seed
    from canter.tools.checks import check_collect_settings

    check_collect_settings(args.transitions, args.epsilon, args.seed)
    if args.run_dir is None and args.epsilon and not args.from_replay:
        raise CanterError("--epsilon mixes random actions into a run's policy; without a run directory every "
                          "action is already random: drop --epsilon, or give the run directory")


def _collect_destination(out: str) -> tuple[str | None, Any]:
    """``(minari_id, None)`` for ``minari:ID``, else ``(None, checkpoint base path)``; refuses to overwrite."""
    from canter.checkpoint import checkpoint_base
    from canter.data.dataset import MINARI_PREFIX, minari_exists

    if out.startswith(MINARI_PREFIX):
        minari_id = out[len(MINARI_PREFIX):]
        if minari_exists(minari_id):  # a malformed id is refused here too
            raise CanterError(f"Minari dataset '{minari_id}' already exists; choose another --out")
        return minari_id, None
    name = os.path.basename(out)
    if not name or name in (".", ".."):
        raise CanterError(f"--out needs a file name (the dataset's .safetensors and .json are named after it), "
                          f"got '{out}'; e.g. --out data/cartpole")
    check_utf8_path(out, "--out")  # written, the dataset could not be read back (safetensors)
    base = checkpoint_base(out)
    if base.is_dir():  # it wrote DIR.safetensors and DIR.json beside the directory, named like it
        raise CanterError(f"--out: '{base}' is a directory; a dataset is written as a file pair named after --out: "
                          f"give a name, such as '{base / 'dataset'}'")
    for existing in (base.with_name(base.name + ".safetensors"), base.with_name(base.name + ".json")):
        if existing.exists():
            raise CanterError(f"'{existing}' already exists; choose another --out")
    # missing directories are made when the dataset is saved, as canter plot's --out makes them; until 2026-11-28 a
    # missing one was refused, and the docs' own 'canter collect ... --out data/cartpole' failed in a fresh folder
    parent = base.absolute().parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise CanterError(f"--out: '{parent}' is a file, not a directory")
    return None, base


def cmd_collect(argv: list[str]) -> int:
    """``canter collect [RUN_DIR] --out PATH [--env ENV] [--env-kwargs YAML] [--transitions N] [--epsilon E] [--seed S]
    [--from-replay]``"""
    from canter.cli import parse_env_kwargs

    args = _collect_parser().parse_args(argv)
    _check_collect_args(args)
    extra_kwargs = parse_env_kwargs(args.env_kwargs)
    minari_id, base = _collect_destination(args.out)
    from canter.data.dataset import collect, from_replay

    if args.from_replay:
        data = from_replay(args.run_dir)
    elif args.run_dir is None:
        from canter.envs.turns import check_given_opponent

        check_given_opponent(args.env, extra_kwargs)  # as with a run: else a random opponent, silently
        data = collect(args.env, args.transitions, None, seed=args.seed, env_kwargs=extra_kwargs)
    else:
        from canter.api import find_checkpoint

        from canter.data.dataset import check_dataset_agent

        from canter.cli import _load_for_env

        agent, env_id, env_kwargs = _load_for_env(args.run_dir, args.env, extra_kwargs, multi_policy=False)
        check_dataset_agent(agent, f"run '{args.run_dir}'")
        meta = getattr(agent, "metadata", {}) or {}
        source = {"checkpoint": str(find_checkpoint(args.run_dir).absolute()), "algorithm": meta.get("algorithm"),
                  "checkpoint_step": meta.get("step")}
        data = collect(env_id, args.transitions, agent, epsilon=args.epsilon, seed=args.seed, env_kwargs=env_kwargs,
                       info=source)
    data.user_modules = _user_modules(args.run_dir, data.env_id)
    if minari_id is not None:
        written = data.to_minari(minari_id)  # whole episodes only
    else:
        try:  # again: another collect to the same --out may have finished while this one ran
            _collect_destination(args.out)
        except CanterError as exc:
            raise CanterError(f"{exc} (it was written while this collect ran; nothing was saved)") from None
        data.save(base)
        written = len(data)
    mean = data.info.get("mean_return")
    where = args.out if minari_id is not None else f"{base}.safetensors"
    episodes = data.info["episodes"]
    print(f"wrote {written:,} transition{'' if written == 1 else 's'} of {data.env_id} ({episodes} complete "
          f"episode{'' if episodes == 1 else 's'}, mean return {'n/a' if mean is None else f'{mean:.2f}'}) to {where}")
    return 0


def _user_modules(run_dir: str | None, env_id: str) -> list[str]:
    """The user modules a dataset of ``env_id`` records (``TransitionDataset.user_modules``): those of the run it
    came from (its checkpoint's, which imported them to load it), then the one that registered the env by name."""
    from canter.registry import user_modules

    modules: list[str] = []
    if run_dir is not None:
        from canter.checkpoint import find_checkpoint, read_metadata

        recorded = read_metadata(find_checkpoint(run_dir)).get("user_modules")
        modules = [m for m in recorded if isinstance(m, str)] if isinstance(recorded, list) else []
    return modules + [m for m in user_modules({"env": env_id}) if m not in modules]
