"""The layers a run config is read from, besides files: the shipped presets (``canter/configs/ALGO/ENV.yaml``, an
Atari game's shared ``atari.yaml`` first) and ``--set key=value`` items."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from canter.errors import CanterError, shown
from canter.yaml_io import load_yaml


def preset_path(algo: str, env: str) -> Path:
    """Where the shipped preset for ``algo`` on ``env`` lives (``canter/configs/ALGO/ENV.yaml``)."""
    return Path(__file__).parent / "configs" / algo / f"{env.replace('/', '-').replace(':', '-')}.yaml"


def preset_layers(algo: str, env_id: str) -> list[tuple[str, dict[str, Any]]]:
    """``(path, contents)`` of the shipped presets of registered algorithm ``algo`` on ``env_id``, in the
    order they apply (an Atari game's shared ``atari.yaml`` first); none where canter ships none."""
    from canter.ale import looks_like_atari  # not canter.envs.atari: its package imports torch (--help)

    atari = looks_like_atari(str(env_id))
    presets = [preset_path(algo, "atari")] if atari else []  # shared Atari settings
    # module:EnvId (gymnasium's form: the module is imported, EnvId is made) gets EnvId's presets:
    # ale_py:ALE/Pong-v5 -> ALE/Pong-v5's, gymnasium:CartPole-v1 -> CartPole-v1's; pettingzoo:MODULE names no env id
    prefixed = ":" in str(env_id) and not str(env_id).startswith("pettingzoo:")
    game = str(env_id).split(":", 1)[-1] if atari or prefixed else str(env_id)
    older = re.fullmatch(r"([A-Z][A-Za-z]*?)(?:NoFrameskip)?-v[04]", game) if atari else None
    if older and not os.path.isfile(preset_path(algo, game)):  # Pong-v4, PongNoFrameskip-v0: the same game under
        game = f"{older[1]}NoFrameskip-v4"  # canter's preprocessing (frame skip and sticky actions are its own)
    # os.path.isfile is False (not an error) for odd names, e.g. too long
    return [(str(p), load_yaml(p)) for p in presets + [preset_path(algo, game)] if os.path.isfile(p)]


def set_list(sets: Any) -> list[Any]:
    """``sets`` (Python's ``sets=`` argument: ``--set`` items) as a list: None is no items, one ``"key=value"``
    string is one item (iterated, it was one item per character); a mapping or another non-sequence is a one-line
    :class:`CanterError` (each item is then checked by :func:`parse_set`)."""
    if sets is None:
        return []
    if isinstance(sets, str):
        return [sets]
    if isinstance(sets, (list, tuple)):
        return list(sets)
    hint = " (keys as keyword arguments: lr=1e-3, or hparams={...})" if isinstance(sets, dict) else ""
    raise CanterError(f"sets must be --set strings 'key=value' (a list, or one alone){hint}, got {shown(sets)}")


def parse_set(item: str) -> tuple[str, str]:
    """Split one ``--set key=value`` item."""
    if not isinstance(item, str):  # make_trainer(sets=[...]) from Python
        raise CanterError(f"--set expects key=value strings, got {shown(item)}")
    key, sep, value = item.partition("=")
    if not sep or not key.strip():
        raise CanterError(f"--set expects key=value, got '{item}'")
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        # a quoted string (--set "model='x'") reads as YAML reads it, as a nested value's quotes did (the name
        # was 'x' with its quotes)
        from canter.yaml_io import safe_load

        try:
            unquoted = safe_load(value)
        except Exception:  # noqa: BLE001  ('a'b': not one quoted string, kept as typed)
            unquoted = None
        if isinstance(unquoted, str):
            value = unquoted
    return key.strip(), value


def set_items(sets: list[str] | tuple | str | None) -> tuple[dict[str, Any], set[str]]:
    """The ``--set`` layer: ``sets`` (``key=value`` items, in their order) as key -> value, a key given again moved
    to the end (the last ``--set`` wins over its aliases, ``lr`` and ``hparams.lr``), and the keys whose value is
    read already (not YAML text: a quoted string's too). ``hparams={...}`` counts as one ``hparams.NAME`` item per entry and
    ``policy_hparams={...}`` as one ``policy_hparams.POLICY.KEY`` per policy and key (a policy given as no mapping
    or an empty one, or a whole value that is no mapping, stays one item), so a second one keeps the first one's
    entries: a second ``--set policy_hparams={speaker: ...}`` dropped the first one's ``listener`` silently."""
    from canter.yaml_io import parse_yaml_value

    items: dict[str, Any] = {}
    parsed: set[str] = set()
    for item in set_list(sets):
        key, value = parse_set(item)
        # a quoted value (--set "env_kwargs.version='1.0'") is the string inside the quotes, already read: an entry
        # of a mapping setting took it as YAML again, the string '1.0' becoming the float 1.0, 'null' None
        quoted = value != item.partition("=")[2].strip()
        pairs: list[tuple[str, Any, bool]] = [(key, value, quoted)]
        if key in ("hparams", "policy_hparams"):
            entries = parse_yaml_value(value, key)
            if key == "hparams" and isinstance(entries, dict):
                pairs = [(f"hparams.{k}", v, True) for k, v in entries.items()]
            elif key == "policy_hparams" and isinstance(entries, dict) and entries and all(
                    _entry_name(p) for p in entries):  # (a name that is no plain string is refused whole, as before)
                pairs = [pair for p, keys in entries.items() for pair in (
                    [(f"{key}.{p}.{k}", v, True) for k, v in keys.items()] if isinstance(keys, dict) and keys and all(
                        _entry_name(k) for k in keys) else [(f"{key}.{p}", keys, True)])]
        for key, value, read in pairs:
            items.pop(key, None)
            items[key] = value
            (parsed.add if read else parsed.discard)(key)
    return items, parsed


def _entry_name(name: Any) -> bool:
    """Whether ``name``, of a ``--set`` mapping, can be given as a dotted key's entry (``policy_hparams.NAME``)."""
    return isinstance(name, str) and bool(name) and "." not in name
