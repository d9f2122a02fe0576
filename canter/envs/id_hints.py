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
    417 choices): its ids, when ``env_id`` names a module that can be found and imports (an import that fails, or a
    module that registers no env, is left to the unknown id's error); else None."""
    import importlib
    import importlib.util
    import re

    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", env_id):
        return None
    if env_id.split(".")[0] in getattr(sys, "stdlib_module_names", ()):  # registers no env; importing 'this' printed
        return None  # the Zen of Python (and 'antigravity' opened a web browser) before the unknown id's line
    try:
        if importlib.util.find_spec(env_id) is None:
            return None
        importlib.import_module(env_id)
    except (Exception, SystemExit):  # noqa: BLE001 - not a module that imports: the id's own error says what it is
        return None
    ids = module_ids(env_id)
    if not ids:
        return None
    shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    return CanterError(f"env '{env_id}' is a module, not an env id; pass one of the ids it registers as "
                       f"--env {env_id}:ID, e.g. --env {env_id}:{ids[0]} (it registers {shown})")


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
