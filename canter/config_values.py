"""Config values: the :func:`hp` field declaration, and reading a value from YAML or a ``--set`` string
(:func:`coerce`) and checking it against its field's range or choices (:func:`check_range`); used by
:mod:`canter.config`, which re-exports them."""
from __future__ import annotations

import dataclasses
import math
import os
import re
import types
import typing
from dataclasses import field
from typing import Any, Union

from canter.errors import CanterError, closest, shown, unknown
from canter.yaml_io import dashed_pairs, glued_word, parse_yaml_value


def hp(
    default: Any,
    doc: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    choices: tuple[Any, ...] | None = None,
    search: dict[str, Any] | None = None,
) -> Any:
    """Declare a config field with a default, a one-line doc and its valid values.

    ``low``/``high`` bound numbers (``low_open`` makes the lower bound exclusive), ``choices``
    lists valid values, and ``search`` declares a tuning search space.
    """
    meta = {"doc": doc, "low": low, "high": high, "low_open": low_open, "choices": choices, "search": search}
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda d=default: type(d)(d), metadata=meta)
    return field(default=default, metadata=meta)


def _origin_args(tp: Any) -> tuple[Any, tuple[Any, ...]]:
    origin = typing.get_origin(tp)
    return origin, typing.get_args(tp)


def _is_optional(tp: Any) -> tuple[bool, Any]:
    origin, args = _origin_args(tp)
    if origin in (Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return True, rest[0] if len(rest) == 1 else Union[tuple(rest)]  # type: ignore[return-value]
    return False, tp


def type_name(tp: Any) -> str:
    """A short human name for a field type (``float``, ``list[int]``, ``int or null``)."""
    optional, inner = _is_optional(tp)
    origin, args = _origin_args(inner)
    if origin is list:
        item = args[0] if args else None  # list[list[int]] names its items' type too (was 'list[list]')
        name = "list" if item is None else f"list[{type_name(item) if typing.get_origin(item) else item.__name__}]"
    elif origin is dict:
        name = "mapping"
    else:
        name = getattr(inner, "__name__", str(inner))
    return f"{name} or null" if optional else name


def _a(name: str) -> str:
    """``name`` with its indefinite article: 'an int', 'a float'."""
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def sb3_value_hint(key: str, value: Any) -> str:
    """What a value written as Stable-Baselines3 takes it is here (appended to a type error), or "": a schedule
    function for a number (``learning_rate=lambda progress: ...``), an activation class (``activation_fn=nn.ReLU``),
    separate actor and critic widths for an algorithm without them (``net_arch=dict(pi=[...], vf=[...])``),
    ``target_entropy='auto'``, ``gradient_steps=-1``, an action noise object."""
    name = key.rsplit(".", 1)[-1]
    if isinstance(value, type) and name == "activation":
        named = value.__name__.lower()
        named = f"'{named}'" if named in ("tanh", "relu", "elu", "gelu", "silu") else "tanh, relu, elu, gelu or silu"
        return f" (Stable-Baselines3's activation_fn class; canter names it: {named})"
    if name == "action_noise" and not isinstance(value, str):  # SB3's noise objects are callable too
        return (" (Stable-Baselines3's NormalActionNoise or OrnsteinUhlenbeckActionNoise object: canter names the "
                "kind, normal or ou, and takes its sigma as noise_std, in the [-1, 1] action scale as SB3 adds it)")
    if callable(value) and not isinstance(value, type):
        return (" (a Stable-Baselines3 schedule function? canter's schedules are named settings: lr_decay linear, "
                "cosine or step for every algorithm's learning rates, and some algorithms' lr_schedule)")
    zoo = re.fullmatch(r"lin_([-+.\deE]+)", value.strip()) if isinstance(value, str) else None
    if zoo:  # rl-zoo3's linear schedules: lin_0.001
        how = {"lr": "lr_decay: linear (every algorithm; PPO's lr_schedule: linear too)",
               "clip_range": "clip_schedule: linear"}.get(name)
        return (f" (rl-zoo3's linear schedule from {zoo[1]}: here {name}: {zoo[1]} with {how})" if how else
                f" (rl-zoo3's linear schedule: here the number, {zoo[1]}; canter schedules lr and clip_range)")
    if name == "target_entropy" and value == "auto":
        return " (Stable-Baselines3's 'auto' is null here: -action_dim)"
    if name == "gradient_steps" and value == -1:  # off-policy algorithms take it; an offline one's count is its own
        return (" (Stable-Baselines3's -1, a gradient step per env step collected, is an off-policy setting; here "
                "gradient_steps counts the updates of one iteration)")
    if name == "net_arch" and (isinstance(value, dict) or (isinstance(value, (list, tuple)) and any(
            isinstance(v, dict) for v in value))):  # sb3_net_arch reads it where the config has critic_net_arch
        return (" (Stable-Baselines3's dict(pi=..., vf=...): the actor-critic algorithms read it as net_arch and "
                "critic_net_arch; here net_arch is one list of layer widths, the critic's, where there is one, "
                "critic_net_arch)")
    return ""


#: what an off-policy ``train_freq`` counts (``train_freq_unit``): env steps or finished episodes, of all env copies
TRAIN_FREQ_UNITS = ("step", "episode")


def split_train_freq(value: Any, key: str) -> tuple[Any, str] | None:
    """Stable-Baselines3's ``train_freq=(N, "episode")`` (a list or tuple, its ``TrainFreq``, or the text
    ``[N, episode]`` / ``(N, 'step')`` of ``--set``) as ``(N, unit)``; None for any other value (a plain count)."""
    if isinstance(value, str) and value.strip()[:1] in ("[", "("):
        text = value.strip()
        if text.startswith("(") and text.endswith(")"):
            text = f"[{text[1:-1]}]"
        value = parse_yaml_value(text, key)
    if not isinstance(value, (list, tuple)):
        return None
    if len(value) != 2:
        raise CanterError(f"'{key}' must be a count, or Stable-Baselines3's pair [N, step] or [N, episode], got "
                          f"{shown(value)}")
    count, unit = value
    unit = getattr(unit, "value", unit)  # SB3's TrainFrequencyUnit.EPISODE
    if unit not in TRAIN_FREQ_UNITS:
        near = closest(str(unit), TRAIN_FREQ_UNITS, n=1) or ["step"]
        raise CanterError(f"'{key}': unknown unit {shown(unit)} (step or episode); did you mean [{shown(count)}, "
                          f"{near[0]}]?")
    return count, unit


def sb3_net_arch(cls: type, name: str, value: Any, key: str) -> list[tuple[str, Any]]:
    """``[(name, value)]``, or for Stable-Baselines3's ``net_arch`` mapping given to a config ``cls`` that has
    ``critic_net_arch`` (its ``sb3_critic_key``: ``dict(pi=[...], vf=[...])`` on-policy, ``dict(pi=[...],
    qf=[...])`` off-policy; a mapping's YAML text from ``--set`` too), its entries as ``net_arch`` (pi) and
    ``critic_net_arch``. Other keys, or one of the two missing, are refused naming ``key``."""
    critic = getattr(cls, "sb3_critic_key", None)
    if name != "net_arch" or critic is None:
        return [(name, value)]
    parsed = parse_yaml_value(value, key) if isinstance(value, str) and value.strip()[:1] in ("{", "[") else value
    owner = "critics'" if critic == "qf" else "critic's"
    form = f"pi the actor's hidden layers, {critic} the {owner}"
    if isinstance(parsed, (list, tuple)) and any(isinstance(v, dict) for v in parsed):
        raise CanterError(f"'{key}' is in Stable-Baselines3's older list form ([dict(...)], or shared layers then a "
                          f"dict): write net_arch={{pi: [...], {critic}: [...]}} ({form})")
    if not isinstance(parsed, dict):
        return [(name, value)]
    form = f"Stable-Baselines3's dict(pi=[...], {critic}=[...]): {form}"
    for k in parsed:
        if k not in ("pi", critic):
            near = closest(str(k), ["pi", critic])
            hint = f"did you mean '{near[0]}'?" if near else f"its keys are pi and {critic}"
            raise CanterError(f"'{key}' has an unknown key {shown(k)}; {hint} ({form})")
    missing = [k for k in ("pi", critic) if k not in parsed]
    if missing:
        raise CanterError(f"'{key}' as a mapping needs both pi and {critic}, {missing[0]} is missing ({form}; "
                          f"one list, net_arch: [...], is both)")
    return [("net_arch", parsed["pi"]), ("critic_net_arch", parsed[critic])]


def readable_type(tp: Any) -> bool:
    """Whether :func:`coerce` reads values of config field type ``tp`` from YAML, ``--set`` and flags: bool, int,
    float, str, list (of any of these, ``list[list[int]]`` and ``list[dict]`` too), dict and Any, or one of them or
    null (a tuple, a Literal or a union of two types reached the algorithm as --set's text, unchecked)."""
    optional, inner = _is_optional(tp)
    origin, args = _origin_args(inner)
    if inner in (bool, int, float, str, list, dict, Any) or origin is dict:
        return True
    return origin is list and all(readable_type(a) for a in args)  # coerce reads each item as its own type


#: the ``--set`` words an optional setting reads as null, as YAML's ``null`` and ``~`` (``--set dataset=none`` too)
NULL_WORDS = ("null", "none", "~")


def is_null_word(value: Any) -> bool:
    """Whether ``value`` is a ``--set`` string that a setting other than a string one reads as null
    (:data:`NULL_WORDS`): an optional one's null, a required one's refused null."""
    return isinstance(value, str) and value.strip().lower() in NULL_WORDS


def left_empty(tp: Any, value: Any, source: str) -> Any:
    """A config file's mapping or list setting (type ``tp``) left empty (``env_kwargs:``, ``callbacks:``: YAML's null)
    as the empty mapping or list, as a file's ``hparams:`` left empty is; any other value, an optional setting's null,
    and ``--set``'s or Python's (``source`` ``'--set'`` / ``'arguments'``) as given."""
    if value is not None or source in ("arguments", "--set"):
        return value
    optional, inner = _is_optional(tp)
    origin, _ = _origin_args(inner)
    if optional:
        return value
    return {} if dict in (origin, inner) else [] if list in (origin, inner) else value


def coerce(tp: Any, value: Any, key: str) -> Any:
    """Convert ``value`` (from YAML or a ``--set`` string) to type ``tp`` or raise a CanterError."""
    value = python_scalar(value)
    optional, inner = _is_optional(tp)
    origin, args = _origin_args(inner)
    container = list in (origin, inner) or dict in (origin, inner)
    if isinstance(value, str) and not value.strip() and (inner in (bool, int, float) or dict in (origin, inner)):
        # --set seed= (an empty text, not YAML's null): said as such for every typed key, the numbers' "got ''" as
        # a mapping's (it was 'got null'); refused for an optional one too, as before (a list's is the empty list)
        raise CanterError(f"'{key}' must be {_a(type_name(tp))}, got an empty value")
    if is_null_word(value) and (optional or container or inner in (bool, int, float)):
        # --set KEY=null is a file's 'KEY: null' (a list's was the list [null], a mapping's 'got None', a number's
        # "got 'null'"); a string setting's stays the word, which may be one of its choices ('none')
        value = None
    if value is None:
        if optional:
            return None
        raise CanterError(f"'{key}' must be {_a(type_name(tp))}, got null")

    def bad() -> CanterError:
        # env_kwargs:\n  max_episode_steps:200 (hooks: my_pkg:fn is a path given without its hook's name, not glued)
        glued = glued_word(value) if dict in (origin, inner) and (key != "hooks" or str(value).count(":") > 1) else ""
        glued += dashed_pairs(value) if dict in (origin, inner) else ""  # env_kwargs:\n  - max_episode_steps: 200
        return CanterError(f"'{key}' must be {_a(type_name(tp))}, got {shown(value)}{sb3_value_hint(key, value)}{glued}")

    if inner is bool:
        if isinstance(value, bool):
            return value
        if type(value) is int and value in (0, 1):  # a file's 1 or 0, as --set normalize_obs=1 and flags take it
            return bool(value)
        # YAML 1.1's words (a config file's 'on' is a bool), so --set and flags take what a file takes
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "on", "off", "1", "0"):
            return value.strip().lower() in ("true", "yes", "on", "1")
        raise bad()
    if inner is int:
        if isinstance(value, bool):
            raise bad()
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            _refuse_leading_zero(value, key)
            try:
                return int(value.strip())
            except ValueError:
                pass
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            raise bad() from None
        if not number.is_integer():
            raise bad()
        return int(number)
    if inner is float:
        if isinstance(value, bool):
            raise bad()
        if isinstance(value, str):
            _refuse_leading_zero(value, key)
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            raise bad() from None
        if not math.isfinite(number):
            raise CanterError(f"'{key}' must be a finite number, got {shown(value)}")
        return number
    if inner is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, os.PathLike):  # a path given from Python (dataset=Path(...)), as run_dir takes one
            return os.fspath(value)
        raise bad()
    if origin is list or inner is list:  # ``list[T]`` or a bare ``list``
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("(") and text.endswith(")"):  # a Python tuple, as SB3's net_arch=(64, 64) is written
                text = f"[{text[1:-1]}]"
            value = parse_yaml_value(text if text.startswith("[") else f"[{text}]", key)
        if not isinstance(value, (list, tuple)):
            raise bad()
        item = args[0] if args else Any
        if item is Any:
            return [_plain(v, key) for v in value]
        return [coerce(item, v, key) for v in value]
    if origin is dict or inner is dict:
        if isinstance(value, str):
            value = parse_yaml_value(value, key)
            if value is None:  # --set env_kwargs='# x' reads as YAML's null, so named (it was 'got None')
                return coerce(tp, None, key)
        if not isinstance(value, dict):
            raise bad()
        return _plain(dict(value), key)
    return value


def _refuse_leading_zero(text: str, key: str) -> None:
    """Refuse an integer written with a leading zero (``--set n_steps=010``, a quoted ``'010'``): Python read it
    as 10 where YAML 1.1 reads ``010`` as octal 8, which a config file's unquoted ``010`` is refused for
    (:mod:`canter.yaml_io`); the error suggests the plain number."""
    digits = text.strip().replace("_", "").lstrip("+-")
    if len(digits) > 1 and digits[0] == "0" and digits.isdigit():
        raise CanterError(f"'{key}': {text.strip()!r} has a leading zero, which YAML 1.1 reads as an octal number "
                          f"(010 is 8); write {int(text.strip().replace('_', ''))}")


def python_scalar(value: Any) -> Any:
    """A NumPy scalar or 0-d array (``np.int64(100)``, ``np.True_``, as Python code computes settings) as the Python
    bool, int, float or str it holds; anything else as it is. ``normalize_obs=np.True_`` was refused as no bool,
    ``env_kwargs={'max_episode_steps': np.int64(100)}`` as holding no number."""
    if type(value).__module__ == "numpy" and getattr(value, "shape", None) == () and hasattr(value, "item"):
        item = value.item()
        if isinstance(item, (bool, int, float, str)):
            return item
    return value


def _plain(value: Any, key: str) -> Any:
    """Check that ``value`` is plain data (what YAML and JSON both hold: string keys, finite numbers)."""
    value = python_scalar(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CanterError(f"'{key}' must hold finite numbers, got {shown(value)}")
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v, key) for v in value]
    if isinstance(value, dict):
        for k in value:
            if not isinstance(k, str):  # a number named as YAML writes it unquoted (policy '0' of agent ID 0)
                quote = f": quote it, '{k}'" if isinstance(k, (int, float)) and not isinstance(k, bool) else ""
                raise CanterError(f"'{key}' must have string keys, got {shown(k)}{quote}")
        return {k: _plain(v, key) for k, v in value.items()}
    raise CanterError(f"'{key}' holds a {type(value).__name__} ({shown(value)}); use strings, numbers, lists or mappings")


#: limits of per-iteration counts, far above any setting that is meant (published ones stay under 1/100 of them);
#: past them one iteration would run for days or build more networks than memory holds (n_epochs 1e9 hung)
MAX_PASSES = 100_000  # n_epochs and alike: passes over one rollout, critic epochs, solver iterations
MAX_GRADIENT_STEPS = 10_000_000  # gradient steps of one training phase or offline iteration
MAX_CRITICS = 1_000  # Q networks of an ensemble (REDQ's 10; 100,000 filled memory)
MAX_ENVS = 100_000  # env copies of one process (EnvPool's and GPU simulators' thousands; 1e9 was NumPy's memory traceback)
MAX_EPISODES = 1_000_000  # episodes of one evaluation (1e9 hung in the evaluation)

#: the largest float32 (numpy.finfo(numpy.float32).max): hyperparameters meet float32 tensors
FLOAT32_MAX = 3.4028234663852886e38


def check_range(f: dataclasses.Field, value: Any, key: str, float32: bool = False) -> None:
    """Raise a CanterError if ``value`` breaks the range or choices declared on field ``f``, or is an integer
    that does not fit 64 bits, or (``float32``: an algorithm's hyperparameter) a float beyond float32's range."""
    meta = f.metadata
    if value is None:
        return
    choices = meta.get("choices")
    if choices is not None and value not in choices:
        near = [c for c in choices if isinstance(c, str)]
        raise unknown(f"value for '{key}'", str(value), near) if near else CanterError(
            f"'{key}' must be one of {list(choices)}, got {shown(value)}"
        )
    low, high = meta.get("low"), meta.get("high")
    values = value if isinstance(value, list) else [value]
    for v in values:
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            continue
        if low is not None and low == high and v != low:  # a fixed value: its doc says why (REINFORCE's gae_lambda)
            raise CanterError(f"'{key}' must be {low}, got {shown(v)}: {meta.get('doc')}")
        if low is not None and (v < low or (meta.get("low_open") and v == low)):
            op = ">" if meta.get("low_open") else ">="
            raise CanterError(f"'{key}' must be {op} {low}, got {shown(v)}{sb3_value_hint(key, v)}")
        if high is not None and v > high:
            raise CanterError(f"'{key}' must be <= {high}, got {shown(v)}")
        if isinstance(v, int) and not -(2**63) <= v < 2**63:
            # integer settings become NumPy array and torch tensor sizes, counters and seeds, which hold no more
            # (net_arch: [1e300] was a C++ stack trace from torch)
            raise CanterError(f"'{key}' must fit a 64-bit integer (at most {2**63 - 1:.3g} in size), got {shown(v)}")
        if float32 and isinstance(v, float) and abs(v) > FLOAT32_MAX:
            # torch's float32 arithmetic cannot take it (td3's target_noise_clip or acer's correction_c 1e300
            # were RuntimeError tracebacks: 'value cannot be converted to type float without overflow')
            raise CanterError(f"'{key}' must fit a 32-bit float (at most {FLOAT32_MAX:.3g} in size), got {shown(v)}")


def set_nested(fields: dict[str, tuple[dataclasses.Field, Any]], current: dict[str, Any], key: str, value: Any,
               text: bool) -> Any:
    """``key`` (``env_kwargs.max_episode_steps``: a mapping setting of ``fields``, then entry names) set to ``value``
    in that setting's value so far, ``current[head]`` (else its default): the new value of the setting. ``text``:
    ``value`` is a ``--set`` string, read as YAML; an empty one is refused, as ``--set env_kwargs=`` is (``null`` is
    None). A head that is no mapping setting, or an entry that holds no mapping where the key goes on, is a
    :class:`CanterError` saying how to give the key."""
    head, *path = key.split(".")
    tp = fields[head][1]
    if dict not in (tp, typing.get_origin(tp)):
        raise CanterError(f"'{key}': '{head}' is {_a(type_name(tp))}, not a mapping of entries; give it whole "
                          f"('{head}: VALUE' in YAML, --set {head}=VALUE)")
    if not all(path):
        raise CanterError(f"'{key}' has an empty entry name; write {head}.NAME=VALUE (e.g. --set env_kwargs."
                          f"max_episode_steps=200)")
    f = fields[head][0]
    whole = coerce(tp, current[head], head) if head in current else f.default_factory()  # type: ignore[misc]
    node = whole = dict(whole)
    for i, name in enumerate(path[:-1]):
        inner = node.get(name, {})
        if isinstance(inner, str):
            inner = coerce(dict, inner, ".".join([head, *path[:i + 1]]))
        if not isinstance(inner, dict):
            raise CanterError(f"'{key}': '{'.'.join([head, *path[:i + 1]])}' is {shown(inner)}, not a mapping")
        node[name] = node = dict(inner)
    if text and isinstance(value, str) and not value.strip() and head == "policy_hparams" and len(path) == 2:
        # --set policy_hparams.P.lr= : a policy's hyperparameter, typed as --set lr= is, keeps its empty text for
        # coerce ('got an empty value'); as YAML's null it said 'got null', and an optional one was taken as null
        node[path[-1]] = value
        return whole
    if text and isinstance(value, str) and not value.strip():  # it passed None, YAML's reading of the empty text
        none = f" (null passes None: --set {key}=null)" if head in ("env_kwargs", "eval_env_kwargs") else ""
        raise CanterError(f"'{key}' got an empty value; give a value{none}")
    node[path[-1]] = parse_yaml_value(value, key) if text and isinstance(value, str) else value
    return whole


def entries_last(data: dict[Any, Any], fields: dict[str, Any], reorder: bool) -> list[tuple[Any, Any]]:
    """The items of one config layer ``data``, with ``reorder`` (a layer other than ``--set``, whose keys have no
    order that means anything) the entries of mapping settings (``env_kwargs.max_episode_steps``, of ``fields``)
    after the rest: a file's ``env_kwargs: {...}`` written below ``env_kwargs.max_episode_steps: 50`` replaced the
    whole mapping, dropping the entry without a word."""
    items = list(data.items())
    if not reorder:
        return items
    return sorted(items, key=lambda kv: isinstance(kv[0], str) and "." in kv[0] and kv[0].split(".")[0] in fields)


def check_entry_once(wholes: dict[str, Any], key: str, source: str) -> None:
    """Refuse ``key`` (``env_kwargs.max_episode_steps``), an entry of a mapping setting, where the same layer
    (``source``) gave that setting whole with that entry in it (``wholes``: setting -> value): one layer giving a
    value twice would keep one of them silently, as a hyperparameter given twice would (refused too)."""
    head, *path = key.split(".")
    node = wholes.get(head)
    for name in path:
        if not isinstance(node, dict) or name not in node:
            return
        node = node[name]
    if head in wholes:
        raise CanterError(f"'{key}' and '{head}: {{{path[0]}: ...}}' both set '{key}' in {source}; give it once")
