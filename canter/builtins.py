"""What ``canter list`` and ``canter train ALGO --help`` show of canter's own components, without
importing them (and torch with them).

canter's components register themselves as their modules import, and those modules import torch
(~1 s). ``builtins.json`` next to this file records, for every kind, the names canter registers and
where each is defined, and for every algorithm what ``canter list`` and ``--help`` print (its family,
its docstring's first line, its hyperparameter flags). It is generated from the registry after every
component imported: ``python -m canter.builtins`` writes it, and ``tests/test_builtins.py`` fails
while it differs from what the code would write.

The file answers only while nothing else is registered (a user's ``register`` loads canter's
components first): then canter's components are all there is. Otherwise the registry's own classes
answer, as they do for ``module:Class`` names.
"""
from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

#: the generated file (package data, shipped with canter)
MANIFEST = Path(__file__).with_name("builtins.json")


def hparam_rows(config_cls: type) -> list[list[str]]:
    """``[name, metavar, doc, default]`` of each field of an algorithm's ``Config``, as ``--help``
    prints them (the doc names the choices when it does not already)."""
    from canter.config import describe, fields_of

    specs = fields_of(config_cls)
    rows = []
    for name, tname, default, doc in describe(config_cls):
        choices = specs[name][0].metadata.get("choices")
        if choices and not all(str(c) in doc for c in choices):  # 'hidden activation' named none of them
            doc = f"{doc}: {', '.join(map(str, choices))}"
        rows.append([name, tname.upper().replace(" ", "_"), doc, f"{default}"])
    return rows


#: a reStructuredText cross-reference (``:class:`~pkg.mod.Name```, ``:meth:`Name.method```) or literal (````x````)
_REST = re.compile(r":[a-z]+:`(~?)([^`]+)`|``([^`]+)``")


def plain_text(line: str) -> str:
    """``line`` of a docstring as a terminal shows it: reST roles become their target (only its last
    name after ``~``, as Sphinx renders it) and literals lose their backquotes."""
    def shown(m: re.Match[str]) -> str:
        if m.group(3) is not None:
            return m.group(3)
        return m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2)

    return _REST.sub(shown, line)


def describe_algorithm(cls: type) -> dict[str, Any]:
    """What ``canter list`` and ``--help`` show of algorithm class ``cls``: its ``title``, ``family``,
    ``summary`` (the docstring's first line, as plain text), ``hparams`` (:func:`hparam_rows`) and ``default_n_envs``."""
    return {"title": cls.name.upper(), "family": cls.family,
            "summary": plain_text(((cls.__doc__ or "").strip().splitlines() or [""])[0]) or _no_docstring(cls),
            "hparams": hparam_rows(cls.Config), "default_n_envs": getattr(cls, "default_n_envs", None)}


def _no_docstring(cls: type) -> str:
    """The summary of an algorithm class without a docstring (a user's): its class, and the canter algorithm it
    extends (``canter list`` showed nothing)."""
    own = set(builtin_names("algorithm"))
    base = next((b for b in cls.__mro__[1:] if b.__module__.startswith("canter.") and b.__dict__.get("name") in own),
                None)
    return f"{cls.__name__} (no docstring{f'; extends {base.__name__}' if base is not None else ''})"


@functools.cache
def manifest() -> dict[str, Any]:
    """The contents of :data:`MANIFEST`: ``{"components": {kind: {name: "module:Class"}},
    "algorithms": {name: describe_algorithm(...)}}``."""
    return json.loads(MANIFEST.read_text(encoding="utf-8"))


def builtin_names(kind: str) -> list[str]:
    """The names canter's own components register under ``kind``, from :data:`MANIFEST`."""
    return list(manifest()["components"].get(kind, {}))


def _manifest_answers(name: str) -> bool:
    """Whether :data:`MANIFEST` answers for the algorithm ``name``: a registered name, while canter's
    components are all that is registered."""
    from canter import registry

    so_far = registry.registered_so_far("algorithm")
    return ":" not in name and so_far is not None and set(so_far) <= set(manifest()["algorithms"])


def algorithm_info(name: str) -> dict[str, Any]:
    """:func:`describe_algorithm` of the algorithm ``name`` names (``lookup``'s match: exact, then
    case-insensitive; ``module:Class`` imports it); from :data:`MANIFEST`, without importing it, while
    canter's components are all that is registered. An unknown name is ``lookup``'s error."""
    from canter import registry

    if _manifest_answers(name):
        return registry.match("algorithm", name, manifest()["algorithms"])
    return describe_algorithm(registry.lookup("algorithm", name))


def algorithm_name(name: str) -> str:
    """The name the algorithm ``name`` names is registered under (``ppo`` for ``PPO``; a ``module:Class``
    as given), from :data:`MANIFEST` when it answers (:func:`algorithm_info`), else from the registry."""
    from canter import registry

    if _manifest_answers(name):
        return registry.match("algorithm", name, {k: k for k in manifest()["algorithms"]})
    return registry.registered_name("algorithm", name)


def generate() -> dict[str, Any]:
    """The contents :data:`MANIFEST` should have, from the registry after canter's components imported."""
    from canter import registry

    everything = {kind: registry.registered(kind) for kind in registry.KINDS}
    components = {kind: {name: f"{obj.__module__}:{obj.__qualname__}"
                         for name, obj in sorted(everything[kind].items(), key=lambda item: item[0])
                         if obj.__module__.split(".")[0] == "canter"}
                  for kind in registry.KINDS}
    return {"components": components,
            "algorithms": {name: describe_algorithm(everything["algorithm"][name])
                           for name in components["algorithm"]}}


def dumps(data: dict[str, Any]) -> str:
    """``data`` as :data:`MANIFEST` holds it: JSON, one line per component kind and per algorithm."""
    def section(entries: dict[str, Any]) -> str:
        return ",\n".join(f"    {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in entries.items())

    return ("{\n" + ",\n".join(f'  {json.dumps(key)}: {{\n{section(entries)}\n  }}' for key, entries in data.items())
            + "\n}\n")


if __name__ == "__main__":  # python -m canter.builtins: write the file again
    MANIFEST.write_text(dumps(generate()), encoding="utf-8")
    print(f"wrote {MANIFEST}")
