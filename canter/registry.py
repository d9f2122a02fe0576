"""Name -> class registries for algorithms, models, agents and environments.

``@register("algorithm", "ppo")`` adds a class; :func:`lookup` finds it again, or imports
``"my_pkg.my_mod:MyClass"`` for user code, and fails with the closest valid names.
"""
from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

from canter.errors import ENV_PACKAGES, CanterError, closest, raised_in, unknown

KINDS = ("algorithm", "model", "agent", "env", "encoder")
#: what an imported ``module:Class`` must subclass, per kind (checked before anything is called)
_BASES = {"algorithm": "canter.algorithms.base:Algorithm", "model": "torch.nn:Module", "agent": "canter.agents.agent:Agent",
          "encoder": "torch.nn:Module"}
_REGISTRY: dict[str, dict[str, Any]] = {kind: {} for kind in KINDS}
#: (kind, name) -> the module whose code called :func:`register` (importing it registers the name again; a
#: class defined in one module can be registered by another, so the object's own ``__module__`` may not)
_REGISTERED_BY: dict[tuple[str, str], str] = {}
_BUILTINS_LOADED = False
T = TypeVar("T")
_ON_POLICY = ("n_steps", "gamma", "gae_lambda")
#: the algorithm families canter trains (an algorithm's ``family`` picks its trainer: ``canter.trainers.TRAINERS``,
#: the distributed drivers for ``async``, the offline trainer), each with the hyperparameters its trainer reads
#: from the algorithm's ``Config``
FAMILIES: dict[str, tuple[str, ...]] = {
    "on_policy": _ON_POLICY, "on_policy_recurrent": _ON_POLICY, "async": ("n_steps",),
    "off_policy": ("buffer_size", "learning_starts", "train_freq", "gradient_steps", "batch_size", "gamma"),
    "on_policy_replay": ("n_steps", "buffer_size", "replay_ratio", "replay_start"),
    "offline": ("batch_size", "gradient_steps")}
_CHECKED: set[type] = set()  # user algorithm classes found complete by _check_user_algorithm
#: (kind, name) -> why nothing registered under that name is ever looked up: a value the config reads itself
_RESERVED = {("encoder", "auto"): "encoder: auto picks one of canter's encoders (nature, impala, multi or flat) for "
                                  "the observations and never looks the name up"}


def _same_definition(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` are one definition run twice (same module and qualified name), as
    re-running a notebook cell or reloading a module gives."""
    key = ("__module__", "__qualname__")
    if not all(getattr(a, k, None) is not None and getattr(a, k, None) == getattr(b, k, None) for k in key):
        return False
    if "<lambda>" in a.__qualname__:  # every lambda of a module shares its qualified name: the code tells them apart
        return getattr(a, "__code__", None) is not None and a.__code__ == getattr(b, "__code__", None)
    return True


def register(kind: str, name: str) -> Callable[[T], T]:
    """Class/function decorator that registers ``obj`` under ``kind``/``name``.

    Another object under a taken name is a ``ValueError``; the same definition run again (a
    re-executed notebook cell, a reloaded module) replaces the old one."""
    if kind not in _REGISTRY:
        raise ValueError(str(_unknown_kind(kind)))
    if not isinstance(name, str) or not name.strip() or (":" in name and kind != "env"):
        # lookup() imports a name with ':' as module:Class: such a registration could never be found
        raise ValueError(f"cannot register {kind} {name!r}: a name must be a non-empty string"
                         + ("" if not isinstance(name, str) or not name.strip() else
                            " without ':' (a name with ':' is looked up as module:Class)"))
    if name != name.strip():  # 'my_model ' was found by no config's my_model: "did you mean 'my_model '?"
        raise ValueError(f"cannot register {kind} {name!r}: it has a space before or after it, which no config's "
                         f"name has; register it as {name.strip()!r}")
    if (kind, name) in _RESERVED:  # it was registered, listed by canter list, and silently never used
        raise ValueError(f"cannot register {kind} {name!r}: {_RESERVED[kind, name]}; choose another name")
    if kind == "env" and _owned_env_id(name):
        # the factory replaced Gymnasium's env in every run naming the id, which the id's shipped presets still tuned
        raise ValueError(f"cannot register env {name!r}: it is Gymnasium's id of another env, which the factory would "
                         f"replace wherever the id is named; choose another name")

    def deco(obj: T) -> T:
        # the module registering: where the decorator is applied (@register, register(...)(obj), or a helper's
        # decorator made with register), whose import registers the name again
        caller = sys._getframe(1).f_globals.get("__name__")
        if not _BUILTINS_LOADED and not str(getattr(obj, "__module__", None)).startswith("canter."):
            # a user's component: canter's own are registered first (import canter no longer does it), so that a
            # taken name is refused here, not later inside canter's imports (which would leave the rest unregistered)
            _load_builtins()
        if kind == "env" and not callable(obj):  # it was "'int' object is not callable" when a run made the env
            raise ValueError(f"cannot register env {name!r} to {obj!r:.80}: an env is registered as a class or a "
                             f"factory function that makes it")
        existing = _REGISTRY[kind].get(name)
        if existing is not None and existing is not obj and not _same_definition(existing, obj):
            raise ValueError(f"{kind} '{name}' is already registered to {existing!r}")
        twin = next((k for k, v in _REGISTRY[kind].items() if k != name and k.lower() == name.lower()
                     and v is not obj and not _same_definition(v, obj)), None)
        if twin is not None:  # lookup('Ppo') would find either: 'PPO' of a user's, or canter's 'ppo'
            raise ValueError(f"{kind} '{name}' differs only in case from the registered '{twin}', and names are "
                             f"found case-insensitively; choose another name")
        _REGISTRY[kind][name] = obj
        module = caller if isinstance(caller, str) else getattr(obj, "__module__", None)
        if isinstance(module, str):
            _REGISTERED_BY[(kind, name)] = module
        return obj

    return deco


def _load_builtins() -> None:
    """Import canter's own components, which register themselves (torch with them), once."""
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        from canter import _import_deferring_gc

        _BUILTINS_LOADED = True  # (set first: canter's modules register while they import)
        try:
            _import_deferring_gc("canter.algorithms", "canter.models", "canter.agents")
        except BaseException:  # a Ctrl-C during the import (torch's, on a REPL's first lookup): the next call retries
            _BUILTINS_LOADED = False
            raise


def import_user_module(name: str, why: str) -> ModuleType:
    """Import the user's module ``name``; one that cannot be imported is :func:`import_failure`'s error."""
    try:
        return importlib.import_module(name)
    except (Exception, SystemExit) as exc:
        raise import_failure(name, why, exc) from None


def submodules(package: str) -> list[str]:
    """The names of the modules in ``package`` (``my_pkg``: ``components``, ``envs``), sorted; [] for a package that
    fails to import or a module that is no package (nothing to suggest from)."""
    import pkgutil

    try:
        return sorted(m.name for m in pkgutil.iter_modules(importlib.import_module(package).__path__))
    except Exception:  # noqa: BLE001 - a parent that fails to import, or a module that is no package: no hint
        return []


def _closest_module(missing: str) -> str:
    """``"; did you mean 'my_pkg.components'?"`` for a missing ``my_pkg.componets`` whose package imports: the
    modules beside it that look most like it; ``""`` for a top-level name (which any installed module might
    resemble) or none close."""
    parent, _, leaf = missing.rpartition(".")
    near = closest(leaf, submodules(parent)) if parent else []
    return ("; did you mean " + " or ".join(f"'{parent}.{n}'" for n in near) + "?") if near else ""


def import_failure(name: str, why: str, exc: BaseException, guess: bool = True) -> CanterError:
    """The one-line error ``cannot import module 'NAME'{why}: ...`` for ``exc``, raised while importing ``name``:
    an ImportError's message, else the error with its file and line in the user's code (:func:`raised_in`).
    A SystemExit (a script's ``parse_args()`` or ``sys.exit()`` run at import) says so: it ended the process
    with its own usage line or none. A mistyped module is answered with the closest beside it unless ``guess`` is
    false (a caller with a hint of its own: PettingZoo's games)."""
    if isinstance(exc, ImportError) or (isinstance(exc, Exception) and (not name.strip(".") or name.startswith("."))):
        detail = str(exc)  # a missing module, or a name importlib refused itself
    else:
        detail = raised_in(exc)
    missing = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    if missing and missing.split(".")[0] in ENV_PACKAGES:  # a run's recorded gymnasium_robotics: its pip package
        detail += f"; install it with: pip install {ENV_PACKAGES[missing.split('.')[0]]}"
    if guess and missing and (name == missing or name.startswith(missing + ".")):  # the name itself mistyped
        detail += _closest_module(missing)
    if isinstance(exc, SystemExit):
        detail += "; the module exits when imported (put its script part under if __name__ == '__main__')"
    elif isinstance(exc, (ImportError, TypeError)) and (name.endswith(".py") or "/" in name or "\\" in name):
        # a file's path (./pkg/my_parts is TypeError: importlib's relative import without a package)
        dotted = name.removesuffix(".py").replace("\\", "/").strip("./").replace("/", ".")
        detail += f"; a module is named as Python imports it, '{dotted}' (with its folder on PYTHONPATH), not as a file"
    return CanterError(f"cannot import module '{name}'{why}: {detail}")


def import_object(path: str) -> Any:
    """Import ``"package.module:Attribute"``; errors are :class:`CanterError`."""
    module_name, _, attr = path.partition(":")
    module = import_user_module(module_name, f" (from '{path}')")
    try:
        obj = module
        for part in attr.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        names = [n for n in dir(module) if not n.startswith("_") and not isinstance(getattr(module, n), ModuleType)]
        # 'canter list' shows registered names, not a module's attributes: no hint pointing there
        raise unknown(f"name in module '{module_name}'", attr, names, see=None) from None
    return obj


def _unknown_kind(kind: Any) -> CanterError | None:
    """The error for a ``kind`` that is none of :data:`KINDS` (``names("algorithms")`` was a bare ``KeyError:
    'algorithms'``), naming the closest; None for a known kind."""
    if isinstance(kind, str) and kind in _REGISTRY:
        return None
    near = closest(kind, KINDS, n=1) if isinstance(kind, str) else []
    meant = f"; did you mean '{near[0]}'?" if near else ""
    return CanterError(f"unknown registry kind {kind!r}{meant} (kinds: {', '.join(KINDS)})")


def _check_kind(kind: Any) -> None:
    """Raise :func:`_unknown_kind`'s :class:`CanterError` for a ``kind`` that is none of :data:`KINDS`."""
    error = _unknown_kind(kind)
    if error is not None:
        raise error


def lookup(kind: str, name: str) -> Any:
    """Return what is registered as ``kind``/``name``; ``"mod:Class"`` imports user code. A ``kind`` that is none of
    :data:`KINDS` is a :class:`CanterError` naming the closest."""
    _check_kind(kind)
    _load_builtins()
    if not isinstance(name, str):
        what = f"the class {name.__module__}.{name.__qualname__}" if isinstance(name, type) else repr(name)
        known = [k for k, v in _REGISTRY[kind].items() if v is name] if isinstance(name, type) else []
        if known:  # canter.train(PPO, ...): its name, not how to register a class that already is
            raise CanterError(f"{kind} must be a registered name or a 'module:Class' string, got {what:.200}; pass its "
                              f"registered name '{known[0]}'")
        path = (f" or '{name.__module__}:{name.__qualname__}'"
                if isinstance(name, type) and name.__module__ != "__main__" else "")  # __main__: not again elsewhere
        raise CanterError(f"{kind} must be a registered name or a 'module:Class' string, got {what:.200}; register a "
                          f"class with @canter.register('{kind}', 'name') and pass its name{path}")
    obj = import_object(name) if ":" in name else match(kind, name, _REGISTRY[kind])
    # a registered algorithm is a class too: canter reads its attributes before building it, and a function
    # registered as one was an AttributeError traceback (train, --help, list). A registered agent may be a factory
    # function (what it builds is checked: canter.agent_factory)
    base = _BASES.get(kind) if ":" in name or kind == "algorithm" else None
    if base is not None and not (isinstance(obj, type) and issubclass(obj, import_object(base))):
        article = "an" if kind[0] in "aeiou" else "a"
        what = "" if ":" in name else f" (registered to {getattr(obj, '__module__', None)}." \
                                      f"{getattr(obj, '__qualname__', type(obj).__name__)})"
        raise CanterError(f"'{name}'{what} is not {article} {kind} class (a subclass of {base.replace(':', '.')})")
    if kind == "algorithm":
        _check_user_algorithm(obj, name)
    return obj


def _check_user_algorithm(cls: Any, name: str) -> None:
    """Refuse a user's algorithm class without what canter reads from it before building it: a ``Config``
    dataclass (its hyperparameters, each with a default: one without was a TypeError traceback from ``--help``, list
    and the build), a ``family`` a trainer runs and the hyperparameters that trainer reads (the
    first and last were AttributeError tracebacks, from ``--help``'s flags and the trainer; the family was "cannot
    run on explorers" for a run without any)."""
    if cls in _CHECKED or not isinstance(cls, type) or cls.__module__.split(".")[0] == "canter":
        return
    import dataclasses

    config = getattr(cls, "Config", None)
    if not (isinstance(config, type) and dataclasses.is_dataclass(config)):
        raise CanterError(f"algorithm '{name}' has no Config dataclass (Config = {config!r:.80}): an Algorithm "
                          f"subclass sets Config to the @dataclass of its hyperparameters (canter.config.hp fields)")
    required = [f.name for f in dataclasses.fields(config)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if required:  # --help, list and the build read every default: a TypeError traceback from dataclasses
        raise CanterError(f"algorithm '{name}' has no default for hyperparameter {', '.join(map(repr, required))} of "
                          f"its Config: every hyperparameter needs one (declare it with canter.config.hp(default, doc))")
    from canter.config import fields_of, readable_type, type_name

    odd = [(n, tp) for n, (_, tp) in fields_of(config).items() if not readable_type(tp)]
    if odd:  # --set and flags gave their text unchecked ('[32, 32]' for a tuple), a Literal took any value
        raise CanterError(f"algorithm '{name}' has hyperparameter '{odd[0][0]}' of type {type_name(odd[0][1])}, which a "
                          f"config cannot give: declare it bool, int, float, str, list, list[int] (of any of these) "
                          f"or dict, or one of them | None (a Literal is a str with hp(..., choices=(...)))")
    family = getattr(cls, "family", None)
    if family not in FAMILIES:
        hint = str(unknown("family", str(family), FAMILIES)).split("; ", 1)[1]
        raise CanterError(f"algorithm '{name}' has family {family!r}, which no trainer runs; {hint}")
    missing = [f for f in FAMILIES[family] if f not in {x.name for x in dataclasses.fields(config)}]
    if missing:
        raise CanterError(f"algorithm '{name}' has no hyperparameter {', '.join(missing)}, which the {family} trainer "
                          f"reads: declare {'it' if len(missing) == 1 else 'them'} in its Config with canter.config.hp")
    _CHECKED.add(cls)


def match(kind: str, name: str, entries: dict[str, T]) -> T:
    """``entries[name]``, else the entry whose name is ``name`` but for case; else the ``unknown``
    :class:`CanterError` for ``kind`` with the closest names."""
    try:
        return entries[name]
    except KeyError:
        lowered = {k.lower(): v for k, v in entries.items()}
        if name.lower() in lowered:
            return lowered[name.lower()]
        raise unknown(kind, name, entries) from None


def registered_name(kind: str, name: str) -> str:
    """The name ``name`` is registered under (``lookup``'s match: exact, then case-insensitive);
    ``module:Class`` paths are returned as given."""
    if ":" in name:
        return name
    lookup(kind, name)  # an unknown name: the error with the closest ones
    if name in _REGISTRY[kind]:
        return name
    return next(k for k in _REGISTRY[kind] if k.lower() == name.lower())


def user_modules(config: dict[str, Any]) -> list[str]:
    """The modules that registered the user components a resolved run config names by registered name
    (its ``algo``, ``model``, ``agent``, ``env`` and ``hparams.encoder``), after the config's own
    ``imports``, so that a process loading the
    run can import them again (:func:`import_user_modules`); ``module:Class`` paths import themselves,
    and canter's own parts and those defined in ``__main__`` (a script, a notebook) are left out."""
    _load_builtins()
    imports = config.get("imports")
    modules: list[str] = [m for m in imports if isinstance(m, str)] if isinstance(imports, list) else []
    for kind, name in _config_names(config):
        # the registering module, and the object's own (the registering one, where a helper function of
        # another module called register for it); a Gymnasium id's entry point's module, which registers it
        # where gymnasium.register sits beside the env (or in its package), as the README shows
        for module in _registering_modules(kind, name):
            if _user_module(module):
                modules += [module] if module not in modules else []
    return modules


def _registering_modules(kind: str, name: str) -> tuple[str | None, ...]:
    """The modules whose import may register ``kind``/``name``: the one that registered it and the object's own
    (a ``functools.partial``'s function's: ``partial`` objects say ``functools``); a Gymnasium id's entry point's
    module for an env that canter's registry does not hold (none for other names)."""
    obj = _REGISTRY[kind].get(name) or {k.lower(): v for k, v in _REGISTRY[kind].items()}.get(name.lower())
    if obj is None:
        return (_gym_entry_module(name),) if kind == "env" else ()
    return registered_by(kind, name), defining_module(obj)


def defining_module(obj: Any) -> str | None:
    """The module that defines ``obj`` (a factory, class or function), seen through ``functools.partial`` (a
    partial's ``__module__`` is ``functools``, whatever its function's)."""
    while isinstance(obj, functools.partial):
        obj = obj.func
    module = getattr(obj, "__module__", None)
    return module if isinstance(module, str) else None


def _user_module(module: Any) -> bool:
    """Whether importing ``module`` in another process may register a user's names: a module name that is not
    canter's, ``__main__`` (which no other process can import) or one of :data:`_REGISTER_THEMSELVES`."""
    return isinstance(module, str) and module.split(".", 1)[0] not in ("canter", "__main__", *_REGISTER_THEMSELVES)


def main_registered(config: dict[str, Any]) -> list[tuple[str, str]]:
    """The (kind, name) pairs of a resolved run config's registered names (:func:`user_modules`' names) that
    only ``__main__`` (a script, a notebook) holds: registered there (or a Gymnasium id whose entry point lives
    there), with no module that :func:`user_modules` would record for it. Another process (a Ray explorer)
    cannot import them; a name registered in ``__main__`` for an object of an importable user module is left
    out (that module may register it too), but not one for an object of canter's or Gymnasium's (whose import
    registers nothing of the user's), nor a ``functools.partial`` of a function defined in ``__main__``."""
    _load_builtins()
    found = []
    for kind, name in _config_names(config):
        modules = _registering_modules(kind, name)
        if modules and str(modules[0]).split(".", 1)[0] == "__main__" and not any(map(_user_module, modules)):
            found.append((kind, name))
    return found


#: packages whose env ids every process knows without a user's import: Gymnasium's own, and ale-py's, which canter
#: imports for ALE ids
_REGISTER_THEMSELVES = ("gymnasium", "ale_py")


def _owned_env_id(name: str) -> bool:
    """Whether env name ``name``, or the id after its ``module:`` (``gymnasium:CartPole-v1`` makes CartPole-v1, whose
    presets apply), is an id of Gymnasium's or ale-py's own. ale-py's ids are in Gymnasium's registry only once
    ale-py is imported, which a process that has made no env has not done: ``ALE/Pong-v5`` was registered then, and
    its factory replaced Pong under the Atari presets."""
    import gymnasium

    from canter.ale import looks_like_atari

    ids = {name, name.split(":", 1)[-1]}
    if looks_like_atari(name) and not any(i in gymnasium.registry for i in ids):
        from canter import ale

        ale.register_ale()
    return any(str(_gym_entry_module(i)).split(".")[0] in _REGISTER_THEMSELVES for i in ids)


def _gym_entry_module(env_id: str) -> str | None:
    """The module of the entry point of Gymnasium id ``env_id`` (``"pkg.envs:MyEnv"`` -> ``pkg.envs``, or a
    factory's module, a ``functools.partial``'s function's), or None for an id Gymnasium does not know."""
    import gymnasium

    spec = gymnasium.registry.get(env_id)
    entry = None if spec is None else spec.entry_point
    return entry.split(":", 1)[0] if isinstance(entry, str) else defining_module(entry)


def _config_names(config: dict[str, Any]) -> list[tuple[str, str]]:
    """The (kind, registered name) pairs a run config names: its ``algo``, ``model``, ``agent``, ``env`` and
    ``hparams.encoder``, and each policy's ``algo`` and ``encoder`` of ``policy_hparams``, that are names, not
    ``module:Class`` paths."""
    hparams = config.get("hparams")
    named = [("algorithm", config.get("algo")), ("model", config.get("model")), ("agent", config.get("agent")),
             ("env", config.get("env")), ("encoder", hparams.get("encoder") if isinstance(hparams, dict) else None)]
    policies = config.get("policy_hparams")  # one policy's own algorithm and encoder (they were not recorded)
    for own in policies.values() if isinstance(policies, dict) else ():
        if isinstance(own, dict):
            named += [("algorithm", own.get("algo") if own.get("algo") != "random" else None),
                      ("encoder", own.get("encoder"))]
    return [(kind, name) for kind, name in named if isinstance(name, str) and ":" not in name]


def registered_by(kind: str, name: str) -> str | None:
    """The module that registered ``kind``/``name`` (exact, then case-insensitive, as :func:`lookup` matches):
    the one whose code called :func:`register`, which may differ from the object's ``__module__`` (a module
    registering a class defined in another); None for a name not registered."""
    if name not in _REGISTRY[kind]:
        name = next((k for k in _REGISTRY[kind] if k.lower() == name.lower()), name)
    if name not in _REGISTRY[kind]:
        return None
    module = _REGISTERED_BY.get((kind, name), getattr(_REGISTRY[kind][name], "__module__", None))
    return module if isinstance(module, str) else None


def import_user_modules(modules: Any, where: str, config: Any = None, made: str = "trained") -> None:
    """Import the modules :func:`user_modules` recorded for a run (``where`` names the run or checkpoint
    in the error), so that the registered names of its config are found; a module that cannot be
    imported is a one-line :class:`CanterError`. A name of ``config`` (the run's) that is still not
    registered then (a component registered in a script's ``__main__``, which no module records) is one
    line saying how to make it found. ``made``: what ``where`` was made by (a dataset is ``collected``)."""
    if not isinstance(modules, list) or not all(isinstance(m, str) for m in modules):
        raise CanterError(f"{where} has an invalid 'user_modules' entry: {modules!r:.200}")
    import_modules(modules, f", which registered components that {where} was {made} with")
    for kind, name in _config_names(config) if isinstance(config, dict) else []:
        if kind == "env" or (kind == "encoder" and name == "auto"):  # env: a Gymnasium id too, made later, where
            continue  # an unknown id has its own line; encoder auto: picked by the models
        try:
            match(kind, name, registered(kind))
        except CanterError:
            near = closest(name, registered(kind))
            hint = " (did you mean " + " or ".join(f"'{n}'" for n in near) + "?)" if near else ""
            main = ("one registered in a script or notebook (__main__) is not recorded; register it again before "
                    "loading (import or run its definition), or train with it in a module ('imports: [my_pkg.parts]') "
                    "or as module:Class")
            if modules:  # they imported, and none registers the name now: renamed or removed there, or __main__'s
                said = ", ".join(f"'{m}'" for m in modules)
                main = (f"the module{'s' if len(modules) > 1 else ''} it recorded ({said}) imported and "
                        f"register{'' if len(modules) > 1 else 's'} no {kind} of that name (renamed or removed "
                        f"there?), and " + main)
            why = ": " + main
            raise CanterError(f"{where} was trained with {kind} '{name}', which nothing registers in this process"
                              f"{hint}{why}") from None


def import_modules(modules: list[str], why: str) -> None:
    """Import each module of ``modules``; one that fails is a one-line :class:`CanterError`
    ``cannot import module 'NAME'{why}: the error`` (its file and line for an error other than ImportError)."""
    for module in modules:
        import_user_module(module, why)


def registered(kind: str) -> dict[str, Any]:
    """Every component registered under ``kind`` (canter's own imported first): name -> object."""
    _load_builtins()
    return dict(_REGISTRY[kind])


def registered_so_far(kind: str) -> dict[str, Any] | None:
    """While canter's own components are not all imported (no user's component registered, no lookup
    run): what is registered under ``kind`` so far, by canter's modules imported directly; None once they
    are (then :func:`registered` answers without importing anything)."""
    return None if _BUILTINS_LOADED else dict(_REGISTRY[kind])


def names(kind: str) -> list[str]:
    """Sorted names registered under ``kind`` (one of :data:`KINDS`: ``"algorithm"``, ``"model"``, ``"agent"``,
    ``"env"``, ``"encoder"``; another is a :class:`CanterError` naming the closest); canter's own come from
    :mod:`canter.builtins` while nothing else is registered, so that listing them does not import them (torch with
    them)."""
    _check_kind(kind)
    so_far = registered_so_far(kind)
    if so_far is None:  # a user's component registered (or a lookup ran): the registry has them all
        return sorted(registered(kind))
    from canter.builtins import builtin_names

    return sorted({*builtin_names(kind), *so_far})
