"""Errors that canter reports to the user as one clear line (CLI exit code 2)."""
from __future__ import annotations

import difflib
import os
import re
import sys
import warnings
from collections.abc import Iterable
from types import ModuleType
from typing import Any


class CanterError(Exception):
    """A user-facing error: bad input, a missing file, an unknown name.

    The CLI prints ``canter: error: <message>`` on one line and exits with code 2.
    """


class CanterWarning(UserWarning):
    """A user-facing warning (a legitimate but probably unintended setting); the CLI prints it as
    one line, ``canter: warning: <message>``."""


#: canter's package folder: a warning names the first frame outside it, the user's line that called canter
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


#: the lists of :func:`canter.held_warnings.warnings_taken` open now (innermost last): :func:`warn` appends to it
TAKING: list[list[warnings.WarningMessage]] = []


def warn(warning: Warning) -> None:
    """``warnings.warn(warning)`` attributed to the first caller outside canter's package (the user's
    ``canter.make_trainer(...)`` or ``for record in trainer()`` line), as ``stacklevel`` counted by hand named
    a line of canter's own (``canter/api.py``) wherever the warning sat deeper than its author counted.
    Python 3.12's ``skip_file_prefixes``; on 3.11 the frames are walked.

    Inside :func:`canter.held_warnings.warnings_taken` it is taken into that list, whatever Python's record of the
    warnings shown once per place holds: ``warnings.warn`` drops one already shown at its place before any filter,
    its 'always' too (a multi-policy run's member warning said before by a single-policy run from the same line)."""
    if TAKING:
        frame = sys._getframe(1)
        while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
            frame = frame.f_back
        TAKING[-1].append(warnings.WarningMessage(warning, type(warning), frame.f_code.co_filename, frame.f_lineno))
        return
    if sys.version_info >= (3, 12):
        warnings.warn(warning, stacklevel=2, skip_file_prefixes=(_PACKAGE,))
        return
    frame, level = sys._getframe(1), 2  # level 2: warn's caller
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(warning, stacklevel=level)


class ExplorerError(CanterError):
    """A Ray explorer failed in a way that stops the run (it could not start, or kept failing): the
    message names the explorer and what it raised, on one line."""


class MissingExtraError(CanterError):
    """A feature needs an optional dependency that is not installed: canter's ``extra`` installs it, or where none
    does (``extra`` None), the pip ``package`` (``gymnasium-robotics`` for ``gymnasium_robotics``)."""

    def __init__(self, feature: str, extra: str | None, module: str, package: str | None = None,
                 tail: str = "") -> None:
        install = f"'canter[{extra}]'" if extra else package or module
        super().__init__(f"{feature} needs the '{module}' package; install it with: pip install {install}{tail}")
        self.feature, self.extra, self.module, self.package, self.tail = feature, extra, module, package, tail

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle with every constructor argument (a ``benchmark --jobs`` worker sends it to the parent)."""
        return type(self), (self.feature, self.extra, self.module, self.package, self.tail)


#: the pip package of a module that an env id's ``module:`` names, where no canter extra installs it
ENV_PACKAGES = {"gymnasium_robotics": "gymnasium-robotics"}


def missing_env_package(module: str, env_id: str) -> MissingExtraError | None:
    """The error for ``--env module:Id`` whose ``module`` is one of :data:`ENV_PACKAGES`'s and is not installed
    (``cannot import module 'gymnasium_robotics'`` named no package to install); None otherwise."""
    import importlib.util

    top = module.split(".")[0]
    if top not in ENV_PACKAGES or importlib.util.find_spec(top) is not None:
        return None
    return MissingExtraError(f"env '{env_id}'", None, top, ENV_PACKAGES[top])


def shown_path(path: object) -> str:
    """``path`` as text to print: bytes that are not UTF-8 (``os.fsdecode``'s surrogates) as ``\\xff`` escapes."""
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def check_utf8_path(path: object, what: str = "path") -> None:
    """Raise a one-line :class:`CanterError` if ``path`` is not valid UTF-8 (a directory renamed to such bytes):
    safetensors and pyarrow, which read checkpoints and a run's tables, cannot open it."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        raise CanterError(f"{what} '{shown_path(path)}' is not valid UTF-8, which safetensors and pyarrow cannot "
                          f"open; give it (and the directories holding it) a UTF-8 name") from None


def interrupted() -> int:
    """Report a Ctrl-C that no command handled (while canter's modules import, say) in one line on
    stderr; return the exit code, 130."""
    import sys

    print("interrupted", file=sys.stderr)
    return 130


def notice(text: str) -> None:
    """One line on stderr that a stderr gone (a pipe whose reader the same Ctrl-C or process-group SIGTERM ended:
    ``canter train ... | tee log``) does not turn into an error: a stop signal's notices and ``canter train``'s
    closing line must not cost the stop's save or its exit code."""
    import sys

    try:
        print(text, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # BrokenPipeError; ValueError: a closed stream
        pass


def bad_env_kwargs(env_id: str, kwargs: dict | None, exc: Exception) -> Exception:
    """The error to raise when an env's constructor raised ``exc``: a one-line :class:`CanterError`
    when the user passed ``env_kwargs`` (a misspelled key is a TypeError; a bad value may be any
    error, e.g. FrozenLake's ``map_name: 9x9`` a KeyError), else ``exc`` itself (an env without
    arguments that fails to build is the env's bug, whose traceback helps; but a required argument the constructor
    was not given is the user's to give, in env_kwargs: one line too)."""
    if isinstance(exc, CanterError) or not (kwargs or (isinstance(exc, TypeError) and "required" in str(exc)
                                                       and raised_by_the_call(exc))):
        return exc
    detail = str(exc).splitlines()[0] if str(exc) else ""
    if not isinstance(exc, TypeError):
        detail = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
        return CanterError(f"bad env_kwargs for '{env_id}' {kwargs}: {detail}")
    return CanterError(f"bad env_kwargs for '{env_id}': {detail}{keyword_hint(env_constructors(env_id), exc)}"
                       f"{factory_time_limit_note(env_id, exc)}")


def factory_time_limit_note(env_id: str, exc: BaseException) -> str:
    """For a canter-registered factory's TypeError refusing ``max_episode_steps``: that the factory is given
    ``env_kwargs`` as they are (``max_episode_steps`` is ``gymnasium.make``'s, which a Gymnasium id's env_kwargs
    go to), so it must take the key itself; ``""`` for any other error."""
    from canter.envs.make import registered_factory

    if "unexpected keyword argument 'max_episode_steps'" not in str(exc) or registered_factory(env_id) is None:
        return ""
    return ("; a canter-registered factory is given env_kwargs as they are, and max_episode_steps is "
            "gymnasium.make's: take it in the factory (gymnasium.make(..., max_episode_steps=max_episode_steps), "
            "or gymnasium.wrappers.TimeLimit)")


def env_constructors(env_id: str) -> list[object]:
    """What ``env_kwargs`` of ``env_id`` are passed to: its canter-registered factory, or its Gymnasium entry points
    (single and vectorised) and ``gymnasium.make``; [] when none is found."""
    from canter.envs.make import registered_factory

    factory = registered_factory(env_id)  # 'module:Id' too
    if factory is not None:  # (the Gymnasium branch below offered gymnasium.make's 'id' and 'max_episode_steps')
        return [factory]
    import gymnasium as gym
    from gymnasium.envs.registration import load_env_creator

    gym_id = env_id.split(":", 1)[-1]
    spec = gym.registry.get(gym_id)
    points = [p for p in (spec.entry_point, getattr(spec, "vector_entry_point", None)) if p] if spec else []
    found: list[object] = [gym.make]
    for point in points:
        try:
            found.append(load_env_creator(point) if isinstance(point, str) else point)
        except Exception:  # noqa: BLE001 - an entry point that does not import: no hint from it
            pass
    return found


def shown(value: object, limit: int = 120) -> str:
    """``repr(value)`` for an error message, kept readable: an integer of more than 15 digits in exponent
    form (``1e+300``, as a float prints, not 301 digits), and a text longer than ``limit`` characters cut
    with ``...``."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**15:
        try:
            return f"{value:.6g}"
        except OverflowError:  # beyond a float's range
            return f"{'-' if value < 0 else ''}a number of more than 308 digits"
    return cut(repr(value), limit)


def cut(text: str, limit: int = 120) -> str:
    """``text``, cut to ``limit`` characters with ``...`` when longer (a value echoed in an error message)."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit - 3]}..."


def closest(name: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Return up to ``n`` valid choices that look most like ``name`` (case-insensitive)."""
    choices = list(choices)
    lowered = {c.lower(): c for c in choices}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.5)
    return [lowered[h] for h in hits]


def keyword_hint(fn: object, exc: BaseException) -> str:
    """For ``exc``, a TypeError from calling ``fn`` (a callable, or a list of those it may have reached) with an
    unexpected keyword argument: ``"; did you mean 'patience'?"``, naming the closest parameters; ``""`` when
    there is none (or no such error)."""
    import inspect
    import re

    found = re.search(r"unexpected keyword argument '([^']+)'", str(exc))
    params: set[str] = set()
    callees = [*(fn if isinstance(fn, list) else [fn]), *_refusing_callee(exc)] if found else []
    for f in callees:
        try:
            params.update(p for p, v in inspect.signature(f).parameters.items()  # type: ignore[arg-type]
                          if p != "self" and v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD))
        except (TypeError, ValueError):  # no signature to read (a builtin)
            pass
    near = closest(found.group(1), sorted(params - {found.group(1)})) if found else []  # not the name refused
    return "; did you mean " + " or ".join(f"'{p}'" for p in near) + "?" if near else ""


def _refusing_callee(exc: BaseException) -> list[object]:
    """The callable that refused a keyword in ``exc`` (``"Corridor.__init__() got an unexpected keyword ..."``),
    found by its name in the globals of the innermost frame that called it (a factory passing ``**kwargs`` on to
    a class: the factory's own signature names none); [] when it cannot be found."""
    import re

    named = re.match(r"([\w.]+)\(\) got an unexpected keyword argument", str(exc))
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if named is None or tb is None:
        return []
    parts = [p for p in named.group(1).split(".") if p != "<locals>"]
    obj = tb.tb_frame.f_locals.get(parts[0], tb.tb_frame.f_globals.get(parts[0]))
    for part in parts[1:]:
        obj = getattr(obj, part, None)
    return [obj] if callable(obj) else []


def unknown(kind: str, name: str, choices: Iterable[str], see: str | None = "run 'canter list' to see them",
            ) -> CanterError:
    """Build the error for an unknown ``kind`` called ``name``, suggesting close valid choices.

    Without a close one, more than 12 choices are not listed: ``see`` says where to find them
    (``canter list`` shows registered names, not config keys or Gymnasium's env ids).
    """
    choices = sorted(choices)
    setting = re.fullmatch(r"value for ('.+')", kind)
    if setting and isinstance(name, str) and not name.strip():
        # --set device= (or blank): said as a number's empty value is, 'got an empty value' (it was "unknown value
        # for 'device' ''"), with the choices
        listed = "choices: " + ", ".join(choices) if len(choices) <= 12 else f"{len(choices)} choices" + (
            f"; {see}" if see else "")
        return CanterError(f"{setting.group(1)} got an empty value; {listed}")
    if isinstance(name, str) and name != name.strip() and name.strip() in choices:
        return CanterError(f"unknown {kind} '{cut(name)}': it has a space before or after it; write "
                           f"'{name.strip()}'")
    near = closest(name, choices)
    if near:
        hint = "did you mean " + " or ".join(f"'{c}'" for c in near) + "?"
    elif len(choices) <= 12:
        hint = "choices: " + ", ".join(choices)
    else:
        hint = f"{len(choices)} choices" + (f"; {see}" if see else "")
    return CanterError(f"unknown {kind} '{cut(name)}'; {hint}")


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import and return ``module``, or raise :class:`MissingExtraError` naming the extra."""
    import importlib

    try:
        imported = importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError(feature, extra, module.split(".")[0]) from exc
    if getattr(imported, "__file__", None) is None and hasattr(imported, "__path__"):
        # a namespace package: a bare folder of that name on sys.path (the working directory of python -m canter
        # or a notebook: ./wandb, which wandb writes, or /tmp/ray, which Ray does), not the package
        raise MissingExtraError(feature, extra, module.split(".")[0])
    return imported


def _library_file(filename: str) -> bool:
    """True for a file of Python's own library, an installed package or canter (not the user's code)."""
    import os
    import sysconfig

    if filename.startswith("<"):  # <frozen importlib._bootstrap>, <string>
        return True
    roots = {sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    roots.add(os.path.dirname(os.path.abspath(__file__)))  # canter itself
    path = os.path.abspath(filename)
    return any(root and path.startswith(os.path.abspath(root) + os.sep) for root in roots)


def raised_by_the_call(exc: BaseException, past_numpy: bool = False) -> bool:
    """Whether ``exc`` was raised where gymnasium's or canter's code calls an env's code, or unpacks what it returned
    (a constructor's required argument left out, a ``step()`` that returned None), not inside the env's own code
    (``a, b = self.helper()`` in its ``step``: the env's bug, whose traceback helps). The innermost frame of the
    exception that started it counts (gymnasium raises a constructor's TypeError again, from it); ``past_numpy``: the
    innermost outside NumPy's own code (what called ``np.stack``: gymnasium stacking observations, or the env)."""
    import os

    import gymnasium
    import numpy

    while exc.__cause__ is not None:
        exc = exc.__cause__
    numpy_root = os.path.dirname(os.path.abspath(numpy.__file__)) + os.sep
    tb, path = exc.__traceback__, None
    while tb is not None:
        here = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if not (past_numpy and here.startswith(numpy_root)):
            path = here
        tb = tb.tb_next
    if path is None:
        return False
    roots = (os.path.dirname(os.path.abspath(gymnasium.__file__)), os.path.dirname(os.path.abspath(__file__)))
    return any(path.startswith(root + os.sep) for root in roots)


def raised_in(exc: BaseException) -> str:
    """A user module's or class's exception in one line: ``ValueError: boom (/path/mod.py, line 3)``
    (a SyntaxError: its own file and line; otherwise the innermost frame of the traceback in the
    user's code, not in Python's library, an installed package or canter, where there is one)."""
    import traceback

    if isinstance(exc, SyntaxError):
        message, filename, lineno = exc.msg, exc.filename, exc.lineno
    else:
        frames = traceback.extract_tb(exc.__traceback__)
        frames = [f for f in frames if not _library_file(f.filename)] or frames
        message = str(exc)
        filename, lineno = (frames[-1].filename, frames[-1].lineno) if frames else (None, None)
    where = f" ({filename}, line {lineno})" if filename else ""
    return f"{type(exc).__name__}: {message}{where}"


def _the_call_failed(exc: BaseException) -> bool:
    """True when ``exc`` was raised by the call in the frame that caught it, not inside the callee: no frame
    follows but those of canter's seeded construction of algorithms (:mod:`canter.algorithms.seeding`)."""
    tb = exc.__traceback__
    if tb is None:
        return False
    tb = tb.tb_next
    while tb is not None and tb.tb_frame.f_globals.get("__name__") == "canter.algorithms.seeding":
        tb = tb.tb_next
    return tb is None


def user_class_error(kind: str, cls: type, exc: Exception, arguments: str) -> CanterError | None:
    """The one-line error for ``exc``, which building a user's ``kind`` class ``cls`` raised (a ``module:Class``
    or a registered class outside canter): ``cannot build KIND module:Class: ...``, the user's file and line
    (:func:`raised_in`), or for a call its ``__init__`` does not accept, what it is called with (``arguments``).
    None for a :class:`CanterError` (already one line) and for canter's own classes (a bug: the traceback)."""
    if isinstance(exc, CanterError) or cls.__module__.split(".")[0] == "canter":
        return None
    what = f"cannot build {kind} {cls.__module__}:{cls.__qualname__}"
    if isinstance(exc, TypeError) and _the_call_failed(exc) and "argument" in str(exc):
        # the call itself failed on its arguments (not: an abstract class)
        return CanterError(f"{what}: {exc} ({arguments}: pass them on with **kwargs)")
    if isinstance(exc, TypeError) and "abstract" in str(exc):
        return CanterError(f"{what}: {exc}")
    return CanterError(f"{what}: {raised_in(exc)}")


def build_user_class(kind: str, cls: type, arguments: str, *args: Any, **kwargs: Any) -> Any:
    """``cls(*args, **kwargs)``, where an error of a user's class is :func:`user_class_error`'s one line."""
    try:
        return cls(*args, **kwargs)
    except Exception as exc:
        error = user_class_error(kind, cls, exc, arguments)
        if error is None:
            raise  # a CanterError, or canter's own class: a bug, whose traceback is wanted
        raise error from None


def keywords_checked(name: str, other_names: dict[str, str] | None = None, positional: str = "") -> Any:
    """Decorate a public function or method (called ``name`` in messages, ``canter.load``) so that a call it cannot
    take (a misspelled keyword, ``weight_only=True``) is a one-line :class:`CanterError` naming the closest parameter,
    or what canter calls an argument of Stable-Baselines3's (``other_names``: its name -> the hint), not a
    ``TypeError`` traceback (``positional``: what to add to an error about positional arguments). Only the call's own
    binding is caught: a ``TypeError`` raised inside is left alone."""
    import functools
    import inspect
    import re

    def decorate(fn: Any) -> Any:
        params = [p for p, v in inspect.signature(fn).parameters.items()
                  if p != "self" and v.kind not in (v.VAR_POSITIONAL, v.VAR_KEYWORD)]

        @functools.wraps(fn)
        def checked(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except TypeError as exc:
                if exc.__traceback__ is None or exc.__traceback__.tb_next is not None:
                    raise  # raised inside the function: not the call's arguments
                raise call_error(name, exc, params, other_names or {}) from None

        return checked

    def call_error(name: str, exc: TypeError, params: list[str], others: dict[str, str]) -> CanterError:
        found = re.search(r"unexpected keyword argument '([^']+)'", str(exc))
        if found is None:  # too many positional arguments, a missing one: Python's words, as one line
            return CanterError(re.sub(r"^[\w.]+\(\)", f"{name}()", str(exc)) + (
                f"; {positional}" if positional and "were given" in str(exc) else ""))
        key = found.group(1)
        if key in others:
            return CanterError(f"{name}() has no argument '{key}' (Stable-Baselines3's): {others[key]}")
        near = closest(key, params)
        hint = ("did you mean " + " or ".join(f"'{p}'" for p in near) + "?") if near else (
            "it takes " + ", ".join(params))
        return CanterError(f"{name}() got an unexpected keyword argument '{key}'; {hint}")

    return decorate


def warn_misspelled_methods(obj: Any, names: Iterable[str], base: type = object,
                            aliases: dict[str, str] | None = None) -> None:
    """Warn (a :class:`CanterWarning`) about each method of ``obj``'s class (not of ``base``) that is none of ``names``
    but spelled much like one (``on_evalute``), or named in ``aliases`` (another library's name -> ours:
    Stable-Baselines3's ``_on_step``; other private names are skipped): nothing calls it."""
    names, aliases = list(names), aliases or {}
    for attr in dir(type(obj)):
        if attr in names or hasattr(base, attr) or not callable(getattr(type(obj), attr, None)):
            continue
        near = [aliases[attr]] if attr in aliases else [] if attr.startswith("_") else difflib.get_close_matches(
            attr, names, n=1, cutoff=0.85)
        if near:
            warn(CanterWarning(f"{type(obj).__name__}.{attr} is no hook, so it is never called; did you "
                               f"mean '{near[0]}'?"))


def bool_argument(name: str, value: Any) -> bool:
    """``value`` of the Python API's boolean argument ``name`` (``deterministic``, ``render``, ``weights_only``) as a
    bool, NumPy's bools taken; anything else is a one-line :class:`CanterError` (``'no'`` or ``0.5`` would be read as
    true, ``None`` as false)."""
    if value is True or value is False:
        return value
    import numpy as np

    if isinstance(value, np.bool_):
        return bool(value)
    raise CanterError(f"{name} must be True or False, got {value!r}")


def check_version(version: Any, newest: int, where: str, field: str, thing: str, remedy: str) -> None:
    """Refuse in one line a file's layout version that canter cannot read: ``version`` (its ``field``, in the file
    shown as ``where``) not a whole number or below 1 (no canter writes one: ``thing`` ("a checkpoint") is then not
    one canter wrote, and ``remedy`` ends the line), or above ``newest`` (a newer canter's layout)."""
    if isinstance(version, bool) or not isinstance(version, int):  # no canter writes one: not 'a newer canter'
        raise CanterError(f"{where} has {field} {version!r}, not a whole number: it is not {thing} canter wrote "
                          f"(edited by hand?){remedy}")
    if version < 1:  # 0 or below was read as this canter's layout: no canter writes one
        raise CanterError(f"{where} has {field} {version!r}; {field.replace('_', ' ')}s start at 1: it is not {thing} "
                          f"canter wrote (edited by hand?){remedy}")
    if version > newest:  # read as this canter's layout, it would fail obscurely
        raise CanterError(f"{where} has {field} {version!r}; this canter reads {field} {newest} and before: it was "
                          f"written by a newer canter (pip install -U canter)")
