"""``canter list``: the registered components (canter's own, and those of user modules it is asked to import)
and the shipped presets."""
from __future__ import annotations

from pathlib import Path

from canter.cli_args import ConfigFileAction, _Parser
from canter.errors import CanterError

#: how a user's component is marked in the listing
USER_MARK = "[user: {}]"


def cmd_list(argv: list[str]) -> int:
    """``canter list [--import MODULE]... [-f FILE]``: registered algorithms, models, agents, envs, encoders and
    shipped presets; the components that the user modules given (``--import``, a config's ``imports``)
    register are listed too, each marked with its module."""
    p = _Parser(prog="canter list", description="List registered components and presets.")
    p.add_argument("--import", dest="imports", action="append", default=[], metavar="MODULE",
                   help="also list the components this module registers (repeatable)")
    p.add_argument("-f", "--config", dest="config_file", action=ConfigFileAction,
                   help="also list the components the modules of this run config's 'imports' register")
    args = p.parse_args(argv)
    from canter.builtins import algorithm_info, builtin_names
    from canter.config_imports import config_imports, import_config_imports
    from canter.registry import names, registered_by

    if any(not m.strip() for m in args.imports):
        raise CanterError("--import needs a module name, e.g. --import my_pkg.components")
    if args.config_file is not None:
        import_config_imports(args.config_file, {})
    config_imports(args.imports, "--import")
    user = bool(args.imports) or args.config_file is not None

    def shown(kind: str, name: str) -> str:
        """``name``, marked with the module that registered it where that is not canter."""
        if not user or name in builtin_names(kind):
            return name
        return f"{name} {USER_MARK.format(registered_by(kind, name) or '?')}"

    print("algorithms:")
    algos = [(n, algorithm_info(n)) for n in names("algorithm")]  # canter's own without importing them (torch)
    w1, w2 = max(len(n) for n, _ in algos), max(len(a["family"]) for _, a in algos)
    for n, a in algos:
        mark = shown("algorithm", n)[len(n):]
        print(f"  {n:<{w1}} {a['family']:<{w2}} {a['summary']}{mark}")
    for kind in ("model", "agent", "env", "encoder"):  # encoder: the names 'encoder' takes (--set encoder=impala)
        print(f"{kind}s: " + (", ".join(shown(kind, n) for n in names(kind))
                              or "(none registered; any Gymnasium id works)"))
    print("presets:")
    root = Path(__file__).parent / "configs"
    for path in sorted(root.glob("*/*.yaml")):
        print(f"  {path.parent.name} {_preset_env(path.stem)}")
    return 0


def _preset_env(stem: str) -> str:
    """The env id (as ``--env`` takes it) whose preset file is ``stem``.yaml: ``ALE-Pong-v5`` is
    ``ALE/Pong-v5`` (:func:`~canter.config.preset_path` writes '/' and ':' as '-'); ``atari`` is the
    layer under every Atari game's settings."""
    if stem == "atari":
        return "atari (every Atari game: ALE/*, *NoFrameskip-v4, ...)"
    import gymnasium as gym

    from canter.ale import register_ale
    from canter.config import preset_path

    if stem in gym.registry or not register_ale() or stem in gym.registry:
        return stem
    ids = [i for i in gym.registry if preset_path("", i).stem == stem]
    return ids[0] if len(ids) == 1 else stem
