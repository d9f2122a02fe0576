"""Hints for an env id given as ``module:Id`` whose ``Id`` the imported module does not register
(:func:`canter.envs.make.check_env_id`): the ids it registers, or the id under which an object it names is."""
from __future__ import annotations

import sys
from typing import Any

import gymnasium as gym

from canter.errors import CanterError, closest
from canter.registry import _REGISTRY, registered_by


def entry_module(entry_point: Any) -> str | None:
    """The module a Gymnasium spec's entry point comes from (``"pkg.mod:Class"``, or a callable's module)."""
    if isinstance(entry_point, str):
        return entry_point.split(":", 1)[0]
    return getattr(entry_point, "__module__", None)


def module_ids(name: str) -> list[str]:
    """The env ids that module ``name`` registers (Gymnasium's whose entry point is in it, then canter's)."""
    own = [i for i, spec in gym.registry.items() if entry_module(spec.entry_point) == name]
    return own + [i for i in _REGISTRY["env"] if registered_by("env", i) == name]


def module_given(env_id: str) -> CanterError | None:
    """The error for ``--env mtx``, a module that registers envs given without ``:ID`` (it was 'unknown env id', with
    417 choices): its ids, when ``env_id`` names a module this process has imported already (``imports``, a script's
    own import) that registers envs; else None. A bare name is never imported here: a typo was, when a module of that
    name could be found (``--env train`` ran the ``train.py`` of the current directory before the unknown id's line);
    only ``module:ID`` imports its module (:func:`bare_module_hint` says so for a module that is not imported)."""
    module = sys.modules.get(env_id)
    if module is None or not _module_name(env_id):
        return None
    ids = module_ids(env_id)
    if not ids:
        return None
    shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    return CanterError(f"env '{env_id}' is a module, not an env id; pass one of the ids it registers as "
                       f"--env {env_id}:ID, e.g. --env {env_id}:{ids[0]} (it registers {shown})")


def _module_name(name: str) -> bool:
    """Whether ``name`` has the form of a (dotted) module name."""
    import re

    return re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name) is not None


def bare_module_hint(env_id: str) -> str:
    """For an unknown env id that is also the name of a module that could be imported (found without importing it,
    and not the standard library's, nor a plain folder): how to pass an env that module registers (``--env NAME:ID``);
    else ``""``."""
    import importlib.machinery
    import importlib.util

    if not _module_name(env_id) or env_id in sys.modules:
        return ""
    top = env_id.split(".")[0]
    if top in getattr(sys, "stdlib_module_names", ()):
        return ""
    try:
        spec = importlib.util.find_spec(top)  # a top-level name: found without importing anything
        for part in env_id.split(".")[1:]:  # a package's submodules: looked for in its folders, nothing imported
            where = None if spec is None else spec.submodule_search_locations
            spec = None if where is None else importlib.machinery.PathFinder.find_spec(
                f"{spec.name}.{part}", list(where))
    except (Exception, SystemExit):  # noqa: BLE001 - a finder that fails: no hint
        return ""
    if spec is None or spec.origin in (None, "namespace"):  # a folder without __init__.py (a run directory, a
        return ""  # dataset named for its env) is a namespace package, which registers no env
    return (f"; '{env_id}' is also a module, which a bare env id does not import: an env it registers is "
            f"--env {env_id}:ID")


def ids_hint(module: Any, env_id: str) -> str:
    """The ids ``module`` registers nearest ``env_id`` (all of them, up to 3, for an empty one), or how to register one."""
    name = module.__name__
    own = module_ids(name)
    near = [f"{name}:{c}" for c in (closest(env_id, own) if env_id else own[:3])] or (
        closest(env_id, list(gym.registry)) if env_id else [])
    if near:
        return "did you mean " + " or ".join(f"'{c}'" for c in near) + "?"
    shown = env_id or "MyEnv-v0"
    return (f"the module registers no env{' of that id' if env_id else ''} (gymnasium.register('{shown}', "
            f"entry_point=...) or @canter.register('env', '{shown}') in it)")


def entry_point_given(module: Any, name: str) -> CanterError:
    """The error for ``--env module:Name`` where ``Name`` is the module's env class or factory, not an env id
    that it registers (gymnasium's entry point form: it was 'unknown env id', whose hint showed that same form)."""
    obj, module = getattr(module, name), module.__name__
    ids = [i for i, spec in gym.registry.items() if spec.entry_point in (f"{module}:{name}", obj)]
    ids += [i for i, factory in _REGISTRY["env"].items() if factory is obj]  # @canter.register('env', ...) on it
    if ids:
        return CanterError(f"'{module}:{name}' names an object of {module}, not an env id; it is registered as "
                           f"'{ids[0]}': pass --env {module}:{ids[0]}")
    return CanterError(f"'{module}:{name}' names an object of {module}, not an env id it registers: register it "
                       f"there, e.g. gymnasium.register('{name}-v0', entry_point='{module}:{name}'), and pass "
                       f"--env {module}:{name}-v0 (or @canter.register('env', '{name}-v0') on a factory)")
