"""Save and restore the full state of in-process environments, for exact resume.

Gymnasium has no ``get_state``/``set_state``. What makes an in-process env continue the same way
is the plain data on its objects: the vector env, every sub-env, every wrapper (``TimeLimit``
step counters, ``OrderEnforcing`` flags), the base env (CartPole's ``state`` array), their
``np_random`` generators and the action/observation spaces' generators. :func:`capture_env` walks
that object graph and copies every attribute that is plain data (numbers, strings, numpy arrays of the
dtypes a checkpoint's tensors hold or of dates and durations, object arrays of such items, numpy generators, lists/tuples/dicts of those), walking into plain Python objects (a board game's
``Board``, PettingZoo's ``AgentSelector``) the same way; :func:`restore_env` writes them back into a fresh
env of the same id, built and reset with the same arguments.

The capture is *exact* only when nothing it met was opaque. Objects it cannot copy (a Box2D
world, MuJoCo's ``MjData``, the pipes of an ``AsyncVectorEnv``) are listed in
``problems``; the trainer then resets the env with a new seed on resume instead (a valid run,
but not bitwise identical to an uninterrupted one). Exact: classic control (CartPole, Pendulum,
MountainCar, Acrobot), toy text, and canter-registered pure-Python envs, with native or sync
vectorisation, Atari games on the wrapper path (``sync``, sticky actions included: the emulator's state through ale-py's
``cloneState``; ale-py's native vector env cannot be saved), pure-Python PettingZoo parallel envs (:mod:`canter.envs.multiagent`) and turn-based
games (:mod:`canter.envs.turns`: tic-tac-toe, connect four).
"""
from __future__ import annotations

import abc
import collections
import enum
import sys
import types
from typing import Any

import gymnasium as gym
import numpy as np

from canter.errors import CanterError

#: attributes that configure an env but are not its dynamic state
_SKIP = frozenset({
    "metadata", "spec", "_metadata", "_cached_spec", "_saved_kwargs", "env_fns", "render_mode",
    "autoreset_mode", "observation_mode", "screen", "surf", "screens", "clock", "viewer", "window",
    "_ezpickle_args", "_ezpickle_kwargs", "copy",
    "observation_spaces", "action_spaces", "local_spaces",  # multi-agent envs' spaces per agent or policy (fixed)
    "row_agents", "row_labels",  # multi-agent envs' names of each row's agent and policy (fixed)
    "_action_set",  # an Atari game's actions (ale-py's Action members; fixed)
})
_PLAIN = (bool, int, float, str, type(None))


def _is_env(obj: Any) -> bool:
    from canter.envs.vector import VecEnv

    if isinstance(obj, (gym.Env, gym.Wrapper, gym.vector.VectorEnv, gym.vector.VectorWrapper, VecEnv)):
        return True
    pettingzoo = sys.modules.get("pettingzoo")  # its envs (multi-agent copies) are envs too, if it is in use
    return pettingzoo is not None and isinstance(obj, (pettingzoo.ParallelEnv, pettingzoo.AECEnv))


def _generator_state(gen: np.random.Generator) -> dict[str, Any]:
    return {"__generator__": gen.bit_generator.state}


def _data(value: Any) -> tuple[bool, Any]:
    """``(ok, copy)`` of a plain-data value; ``ok`` False if it holds anything else."""
    if isinstance(value, _PLAIN):
        return True, value
    if isinstance(value, np.generic):
        ok, array = _data(np.asarray(value).reshape(1))
        return ok, {"__scalar__": array, "dtype": str(value.dtype)} if ok else None
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "SU":  # e.g. FrozenLake's map
            return True, {"__strings__": value.astype(str).tolist(), "dtype": value.dtype.str}
        if value.dtype == object:  # a vector env's info of strings (a turn-based game's seats): plain items only
            items = [_data(v) for v in value.ravel().tolist()]
            if not all(ok for ok, _ in items):
                return False, None
            return True, {"__objects__": [v for _, v in items], "shape": list(value.shape)}
        return _numbers(value)
    if isinstance(value, np.random.Generator):
        return True, _generator_state(value)
    if isinstance(value, enum.Enum):  # a game's phase, say: restored by name into the same Enum class
        return True, {"__enum__": value.name}
    if _is_ale(value):  # the emulator, its generator included: ale-py's own serialised state. Not with sticky
        if value.getFloat("repeat_action_probability") > 0:  # actions: they repeat the last action, not in it
            return False, None
        return True, {"__ale__": np.frombuffer(value.cloneState(include_rng=True).serialize(), np.uint8).copy()}
    if isinstance(value, collections.deque):  # gymnasium's FrameStackObservation keeps its frames in one
        ok, items = _data(list(value))
        return ok, {"__deque__": items, "maxlen": value.maxlen} if ok else None
    if isinstance(value, (list, tuple)):
        items = [_data(v) for v in value]
        if not all(ok for ok, _ in items):
            return False, None
        out = [v for _, v in items]
        return True, {"__tuple__": out} if isinstance(value, tuple) else out
    if isinstance(value, dict) and all(isinstance(k, (str, int)) and not isinstance(k, bool) for k in value):
        items = [(k, _data(v)) for k, v in value.items()]
        if not all(ok for _, (ok, _) in items):
            return False, None
        return True, {"__kvs__": [[k, v] for k, (_, v) in items]}
    return False, None


#: the NumPy dtypes a checkpoint's tensors hold (torch's), without their byte order
_TENSOR_DTYPES = frozenset({"b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"})


def _numbers(value: np.ndarray) -> tuple[bool, Any]:
    """``(ok, copy)`` of an array of numbers as a checkpoint's tensors can hold it: dates and durations
    (``datetime64``, ``timedelta64``) as their int64 counts, another byte order than this machine's in its own,
    each with its dtype to restore; ``ok`` False for the others (long doubles, records), which torch cannot hold
    (they made the whole checkpoint's save raise)."""
    dtype = value.dtype
    if dtype.kind in "mM":
        return True, {"__array__": value.view(np.int64).copy(), "dtype": dtype.str}
    native = dtype.newbyteorder("=")
    if dtype.kind not in "biufc" or native.str[1:] not in _TENSOR_DTYPES:
        return False, None
    return True, value.copy() if dtype.isnative else {"__array__": value.astype(native), "dtype": dtype.str}


def _array(saved: dict[str, Any]) -> np.ndarray:
    """The array :func:`_numbers` saved as ``{"__array__": ..., "dtype": ...}``."""
    array, dtype = np.asarray(saved["__array__"]), np.dtype(saved["dtype"])
    return array.view(dtype) if dtype.kind in "mM" else array.astype(dtype)


def _is_ale(value: Any) -> bool:
    """ale-py's emulator interface (an Atari env's ``ale``), whose state :func:`_data` saves through its own
    ``cloneState``: the Atari wrapper path resumes exactly (it was the one thing ``capture_env`` could not copy).
    Not with ALE's own sticky actions: ALE repeats the previous action, which ``cloneState`` leaves out (a restored
    game's next frame differed); canter's Atari envs draw them in Python instead (:mod:`canter.envs.atari_sticky`)."""
    ale_py = sys.modules.get("ale_py")
    return ale_py is not None and isinstance(value, ale_py.ALEInterface)


_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class created at run time (Python code), not a C extension's static type


def _is_object(value: Any) -> bool:
    """A plain Python object: its class and every base but ``object`` are ordinary Python classes (no
    C extension type, whose state would live outside ``__dict__``; no binding metaclass such as
    pybind11's), and it keeps its attributes in ``__dict__``."""
    cls = type(value)
    if not hasattr(value, "__dict__") or type(cls) not in (type, abc.ABCMeta) or hasattr(cls, "__slots__"):
        return False
    return all(c.__flags__ & _HEAPTYPE and type(c) in (type, abc.ABCMeta) for c in cls.__mro__[:-1])


def _ignorable(value: Any) -> bool:
    """Code and configuration, not state: functions, classes, specs, and objects whose class says it
    holds no state (``resume_stateless = True``, e.g. the observation packer of Dict observations)."""
    return isinstance(value, (types.FunctionType, types.MethodType, types.BuiltinFunctionType, type,
                              gym.envs.registration.EnvSpec)) or getattr(type(value), "resume_stateless", False) is True


def capture_env(env: Any) -> tuple[dict[str, Any], list[str]]:
    """Snapshot ``env`` (a :class:`~canter.envs.VecEnv` or any gymnasium env); returns ``(state, problems)``.

    An env object that knows it cannot be snapshot says why in a ``resume_problem`` attribute (the env given, or a
    wrapper class inside it: that reason is the problem listed, rather than the attributes inside it).
    """
    if getattr(env, "resume_problem", None):
        return {}, [str(env.resume_problem)]
    problems: list[str] = []
    seen: set[int] = set()

    def walk(obj: Any, path: str) -> dict[str, Any]:
        seen.add(id(obj))
        out: dict[str, Any] = {}
        skip = getattr(type(obj), "resume_skip", ())  # attributes a class says are saved elsewhere
        for name, value in vars(obj).items():
            where = f"{path}.{name}"
            if name in _SKIP or name in skip or _ignorable(value):
                continue
            if _is_env(value) and getattr(type(value), "resume_problem", None):  # an env that knows why (once)
                if id(value) not in seen:
                    seen.add(id(value))
                    problems.append(str(type(value).resume_problem))
                continue
            if _is_env(value):
                if id(value) not in seen:
                    out[name] = {"__env__": walk(value, where)}
                continue
            if isinstance(value, list) and value and all(_is_env(v) for v in value):
                out[name] = {"__envs__": [walk(v, f"{where}[{i}]") for i, v in enumerate(value)]}
                continue
            if isinstance(value, gym.Space):
                rng = getattr(value, "_np_random", None)
                out[name] = {"__space__": None if rng is None else rng.bit_generator.state}
                continue
            if _is_object(value):  # a game's board, PettingZoo's agent selector: their attributes are state too
                if id(value) not in seen:
                    out[name] = {"__object__": walk(value, where), "class": type(value).__qualname__}
                continue
            ok, data = _data(value)
            if ok:
                out[name] = data
            else:
                problems.append(f"{where} ({type(value).__name__})")
        return out

    return walk(env, type(env).__name__), problems


def _restore_value(current: Any, saved: Any) -> Any:
    if isinstance(saved, dict) and "__array__" in saved:
        saved = _array(saved)  # restored as the array it is, below
    if isinstance(saved, dict):
        if "__generator__" in saved:
            state = saved["__generator__"]
            if not isinstance(current, np.random.Generator):
                current = np.random.Generator(getattr(np.random, state["bit_generator"])())
            current.bit_generator.state = state
            return current
        if "__ale__" in saved:
            if not _is_ale(current):
                raise CanterError(f"cannot restore an Atari emulator's state into {type(current).__name__}")
            current.restoreState(sys.modules["ale_py"].ALEState(np.asarray(saved["__ale__"], np.uint8).tobytes()))
            return current
        if "__deque__" in saved:
            return collections.deque(_restore_value(None, saved["__deque__"]), maxlen=saved["maxlen"])
        if "__enum__" in saved:
            if not isinstance(current, enum.Enum):
                raise CanterError(f"cannot restore the env's enum member '{saved['__enum__']}' into {current!r}")
            return type(current)[saved["__enum__"]]
        if "__tuple__" in saved:
            return tuple(_restore_value(None, v) for v in saved["__tuple__"])
        if "__scalar__" in saved:
            return np.asarray(_restore_value(None, saved["__scalar__"])).astype(saved["dtype"])[0]
        if "__kvs__" in saved:
            return {k: _restore_value(None, v) for k, v in saved["__kvs__"]}
        if "__strings__" in saved:
            return np.array(saved["__strings__"], dtype=saved["dtype"])
        if "__objects__" in saved:
            out = np.empty(len(saved["__objects__"]), dtype=object)
            for i, v in enumerate(saved["__objects__"]):  # one by one: numpy would spread a list item over rows
                out[i] = _restore_value(None, v)
            return out.reshape(saved["shape"])
    if isinstance(saved, list):
        return [_restore_value(None, v) for v in saved]
    if isinstance(saved, np.ndarray):
        if isinstance(current, np.ndarray) and current.shape == () and saved.shape == (1,):
            saved = saved.reshape(())  # a 0-d array that a checkpoint before 2026-11-27 saved 1-d
        if isinstance(current, np.ndarray) and current.shape == saved.shape and current.dtype == saved.dtype:
            current[...] = saved  # keep the array object: other attributes may share it
            return current
        return saved.copy()
    return saved


def _kind(value: Any) -> str | None:
    """What sort of data ``value`` is, for :func:`restore_env`'s check: numbers, arrays, lists and tuples are one
    sort (an env may keep its state as an array at reset and a tuple after a step: MountainCar); None: anything
    may replace it."""
    if value is None:
        return None
    if isinstance(value, (bool, int, float, np.number, np.bool_, np.ndarray, list, tuple)):
        return "a number or array"
    if isinstance(value, (str, dict)):
        return "a string" if isinstance(value, str) else "a mapping"
    return f"a {type(value).__name__}" if isinstance(value, (np.random.Generator, enum.Enum)) else "an object"


def restore_env(env: Any, state: dict[str, Any], where: str = "env") -> None:
    """Write a :func:`capture_env` snapshot back into ``env`` (built like the captured one). A value of another
    sort than the attribute it replaces (a hand-edited checkpoint) is a :class:`CanterError` naming it, as
    ``where`` (the snapshot's place in the checkpoint) and the attribute path."""

    def walk(obj: Any, saved: dict[str, Any], path: str) -> None:
        if not isinstance(saved, dict):
            raise CanterError(f"'{path}' must be a mapping, got {type(saved).__name__}")
        for name, value in saved.items():
            current, here = getattr(obj, name, None), f"{path}.{name}"
            if isinstance(value, dict) and "__env__" in value:
                walk(current, value["__env__"], here)
            elif isinstance(value, dict) and "__envs__" in value:
                for i, (sub, sub_state) in enumerate(zip(current, value["__envs__"])):
                    walk(sub, sub_state, f"{here}.{i}")
            elif isinstance(value, dict) and "__object__" in value:
                if type(current).__qualname__ != value["class"]:
                    raise CanterError(f"cannot restore the env's '{name}': saved a {value['class']}, "
                                      f"this env has a {type(current).__qualname__}")
                walk(current, value["__object__"], here)
            elif isinstance(value, dict) and "__space__" in value:
                if value["__space__"] is not None:
                    current._np_random = _restore_value(current._np_random, {"__generator__": value["__space__"]})
            else:
                restored = _restore_value(current, value)
                was, now = _kind(current), _kind(restored)
                if was is not None and now is not None and was != now:
                    raise CanterError(f"'{here}' must be {was}, as the env has it, got {now}")
                setattr(obj, name, restored)

    walk(env, state, where)
