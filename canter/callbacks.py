"""Trainer hooks: plain callables or :class:`Callback` objects, given in Python or named in YAML.

Every trainer calls these hooks; each receives the trainer first::

    on_train_start(trainer)              once, after setup (and after a resume restored the state)
    before_collect(trainer)              before each iteration collects data
    after_update(trainer, losses)        after each iteration's update (``losses`` may be empty)
    on_evaluate(trainer, result)         after each evaluation (an :class:`~canter.trainers.EvalResult`)
    on_best(trainer, result)             after an evaluation that beat the best so far
    on_checkpoint(trainer, path)         after the run directory saved a checkpoint
    should_stop(trainer) -> reason       a string (or True) ends training after this iteration
    on_env_step(trainer, step) -> reason after every vector env step (an :class:`EnvStep`); a reason ends
                                         training at that step (Stable-Baselines3's ``_on_step``)

The built-in stop criteria are callbacks too (:class:`TargetReward`, :class:`StepBudget`,
:class:`TimeBudget`, :class:`EarlyStopping`), as is :class:`PlateauLR` (in :mod:`canter.stop_criteria`). A callback with state
returns it from ``state_dict`` (JSON values and arrays) so that resumed runs continue exactly.

YAML: ``callbacks: ["my.module:MyCallback", {"my.module:Other": {"patience": 3}}]`` and
``hooks: {after_update: "my.module:log_losses"}`` (a list of paths is allowed per hook).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from canter.errors import CanterError, CanterWarning, warn, keyword_hint, unknown, warn_misspelled_methods

HOOKS = ("on_train_start", "before_collect", "after_update", "on_evaluate", "on_best", "on_checkpoint", "should_stop",
         "on_env_step")
#: what each hook is called with after the trainer (the others: the trainer alone)
HOOK_ARGS = {"after_update": "losses", "on_evaluate": "result", "on_best": "result", "on_checkpoint": "path",
             "on_env_step": "step"}
#: Stable-Baselines3's BaseCallback methods -> the hook that is called where they were
SB3_METHODS = {"_on_step": "on_env_step", "_on_training_start": "on_train_start", "_on_rollout_start": "before_collect"}


class EnvStep(NamedTuple):
    """One vector env step as the trainer took it (an ``on_env_step`` hook's ``step``, Stable-Baselines3's
    ``self.locals``). Arrays have one row per sub-env (a multi-policy run: dicts policy -> rows); nothing is
    copied, so keep a copy of what you store. ``valid`` is False on the rows of a reset-only step (NEXT_STEP
    autoreset, docs/architecture.md section 3): the sub-env's episode ended on the step before, its action
    was ignored, its reward is 0 and ``next_obs`` is the new episode's first observation."""

    obs: Any  #: the observations the actions were chosen for
    actions: Any  #: the actions the env was given
    rewards: Any  #: the env's rewards (float32, not scaled by ``normalize_reward``)
    terminated: Any
    truncated: Any
    valid: Any  #: False where the row only reset its sub-env
    infos: dict[str, Any]  #: the vector env's info dict (gymnasium's: values per sub-env, ``_key`` masks)
    next_obs: Any  #: the observations the step returned


class Callback:
    """Base class: override the hooks you need (the others do nothing)."""

    def on_train_start(self, trainer: Any) -> None:
        """Called once before the first iteration."""

    def before_collect(self, trainer: Any) -> None:
        """Called before each iteration collects data."""

    def after_update(self, trainer: Any, losses: dict[str, float]) -> None:
        """Called after each iteration's update with its statistics."""

    def on_evaluate(self, trainer: Any, result: Any) -> None:
        """Called after each evaluation."""

    def on_best(self, trainer: Any, result: Any) -> None:
        """Called after an evaluation with a new best mean return."""

    def on_checkpoint(self, trainer: Any, path: Any) -> None:
        """Called after the run directory saved a checkpoint (``path`` without suffix)."""

    def should_stop(self, trainer: Any) -> str | bool | None:
        """Return a reason (or True) to stop training after this iteration."""
        return None

    def on_env_step(self, trainer: Any, step: EnvStep) -> str | bool | None:
        """Called after every vector env step; return a reason (or True) to stop training at that step."""
        return None

    def state_dict(self) -> dict[str, Any]:
        """State to save with a resumable checkpoint."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""

    @property
    def stop_name(self) -> str:
        """The stop reason used when ``should_stop`` returns True (the class name in snake case)."""
        return snake_case(type(self).__name__)


def snake_case(name: str) -> str:
    """``name`` (a class name) in snake case: ``StopWhenStable`` -> ``stop_when_stable``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class FunctionHook(Callback):
    """One plain function attached to one hook."""

    def __init__(self, hook: str, fn: Callable[..., Any]) -> None:
        if hook not in HOOKS:
            raise unknown("hook", hook, HOOKS)
        if isinstance(fn, str):  # the YAML form ('module:function') given in Python: it said only 'needs a callable'
            raise CanterError(f"hook '{hook}' needs a callable in Python (hooks={{'{hook}': fn}}), got the string "
                              f"{fn!r}; an import path goes in the run config's hooks (YAML hooks: {{{hook}: {fn!r}}}, "
                              f"or sets=\"hooks.{hook}={fn}\")")
        if not callable(fn):
            raise CanterError(f"hook '{hook}' needs a callable, got {fn!r}")
        if isinstance(fn, type):  # it was called as the hook, building an object each time (truthy: a stop)
            raise CanterError(f"hook '{hook}' needs a function, got the class {fn.__qualname__}; a callback class goes "
                              f"in callbacks (an object from Python, '{fn.__module__}:{fn.__qualname__}' in YAML)")
        self.hook, self.fn = hook, fn
        setattr(self, hook, fn)

    @property
    def stop_name(self) -> str:  # noqa: D102
        name = getattr(self.fn, "__name__", "")
        return name if name.isidentifier() else self.hook  # a lambda's "<lambda>" says nothing: the hook's name


def _overrides(cb: Any, hook: str) -> bool:
    method = getattr(cb, hook, None)
    if method is None:
        return False
    if isinstance(cb, FunctionHook):
        return hook == cb.hook
    return getattr(type(cb), hook, None) is not getattr(Callback, hook) or not isinstance(cb, Callback)


def _check_logged(fn: Any, losses: Any) -> None:
    """Refuse in one line what an ``after_update`` hook ``fn`` left in ``losses`` that is not a number to log."""
    for key, value in losses.items():  # a 0-d tensor or NumPy value as its number (updates.parquet took no tensor)
        losses[key] = value = value.item() if getattr(value, "ndim", None) == 0 and hasattr(value, "item") else value
        from canter.trainers.records import check_stat_name, is_number

        ok = isinstance(key, str) and is_number(value)  # (an array, even of one value, is no number)
        name = getattr(fn, "__qualname__", None) or type(fn).__name__
        if ok:
            check_stat_name(key, f"after_update hook {name}")
        else:
            raise CanterError(f"after_update hook {name} left losses[{key!r}] = {value!r:.60}: the values in losses are "
                              f"logged as numbers (a name str -> an int or float)")


def _check_callable_as(cb: Any, hook: str) -> None:
    """Refuse ``cb``'s ``hook`` when it cannot take what the trainer calls it with (``after_update(trainer)``
    without ``losses`` was a TypeError traceback at the first update)."""
    import inspect

    fn = getattr(cb, hook)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # no signature to read (a builtin): called as it is
        return
    args = ["trainer", *([HOOK_ARGS[hook]] if hook in HOOK_ARGS else [])]
    try:
        signature.bind(*args)
    except TypeError as exc:
        target = cb.fn if isinstance(cb, FunctionHook) else fn
        name = f"{getattr(target, '__module__', '?')}:{getattr(target, '__qualname__', repr(target))}"
        raise CanterError(f"hook {hook} '{name}' cannot be called as {hook}({', '.join(args)}): {exc}") from None


def no_hooks_error(cls: type) -> CanterError:
    """The one-line error for a callback class ``cls`` with none of the hook methods, naming the methods it
    defines (a misspelt ``on_evalute`` alone), in Python (:meth:`Hooks.add`) as in a config's ``callbacks``."""
    own = [a for a in vars(cls) if not a.startswith("__") and not hasattr(Callback, a)  # state_dict: called
           and callable(vars(cls)[a])]
    theirs = f" (it defines {', '.join(own[:6])}: none is called)" if own else ""
    return CanterError(f"callback {cls.__module__}:{cls.__qualname__} has none of the hook methods "
                       f"{', '.join(HOOKS)}{theirs}")


class Hooks:
    """The callbacks of one trainer, dispatched by hook name (only overridden hooks are called)."""

    def __init__(self, callbacks: Iterable[Any] = ()) -> None:
        self.callbacks: list[Any] = []
        self._by_hook: dict[str, list[tuple[Any, Callable[..., Any]]]] = {h: [] for h in HOOKS}
        for cb in callbacks:
            self.add(cb)

    def add(self, cb: Any, first: bool = False) -> None:
        """Attach a callback object (any object with some of the hook methods); ``first``: its hooks run
        before those attached so far."""
        hooks = [h for h in HOOKS if _overrides(cb, h)]
        if not hooks:  # named by its class, as a config names it ('<my_pkg.cb.Cb object at 0x7f...>' said little)
            raise no_hooks_error(type(cb))
        for h in hooks:
            _check_callable_as(cb, h)
        warn_misspelled_methods(cb, HOOKS, Callback, SB3_METHODS)  # never called: said when attached
        self.callbacks.insert(0, cb) if first else self.callbacks.append(cb)
        for h in hooks:
            self._by_hook[h].insert(0 if first else len(self._by_hook[h]), (cb, getattr(cb, h)))

    def find(self, cls: type) -> Any:
        """The first callback of type ``cls`` (or None)."""
        return next((cb for cb in self.callbacks if isinstance(cb, cls)), None)

    def call(self, hook: str, trainer: Any, *args: Any) -> None:
        """Call every callback that implements ``hook``. ``after_update`` hooks may add numbers to ``losses``, which
        are logged with the algorithm's (Stable-Baselines3's ``self.logger.record``); anything else is refused."""
        for _, fn in self._by_hook[hook]:
            fn(trainer, *args)
            if hook == "after_update":
                _check_logged(fn, args[0])

    def env_step_hooks(self) -> list[tuple[Any, Callable[..., Any]]]:
        """The ``on_env_step`` hooks (empty: the trainers take their fast loops)."""
        return self._by_hook["on_env_step"]

    def should_stop(self, trainer: Any, hook: str = "should_stop", *args: Any) -> str | None:
        """Ask every callback; the first reason given wins (True becomes the callback's name). ``hook``:
        ``on_env_step`` asks those hooks, with ``args``."""
        first = None
        for cb, fn in self._by_hook[hook]:
            reason = fn(trainer, *args)
            if reason is True and hook == "on_env_step" and trainer.step <= getattr(trainer.env, "num_envs", 1):
                # an SB3 port's 'return True' (go on, there) stopped the run at its first step
                warn(CanterWarning("on_env_step returned True at the first env step, which stops training "
                                   "(return None to go on; Stable-Baselines3's _on_step returns True to go "
                                   "on)"))
            if reason and first is None:
                # a duck-typed callback (no Callback base) has no stop_name: its class name, as a Callback's
                first = reason if isinstance(reason, str) else getattr(cb, "stop_name", None) or snake_case(
                    type(cb).__name__)
        return first

    def _keyed(self) -> dict[str, Any]:
        """Callbacks by a stable key (class name and its count), leaving out ``internal`` ones."""
        out: dict[str, Any] = {}
        for cb in self.callbacks:
            if not getattr(cb, "internal", False):
                name = type(cb).__qualname__
                out[f"{name}#{sum(k.startswith(name + '#') for k in out)}"] = cb
        return out

    def state_dict(self) -> dict[str, dict[str, Any]]:
        """The state of every callback that has some, by key."""
        states = {k: cb.state_dict() for k, cb in self._keyed().items() if hasattr(cb, "state_dict")}
        return {k: v for k, v in states.items() if v}

    def load_state_dict(self, states: dict[str, dict[str, Any]]) -> None:
        """Restore :meth:`state_dict`; every saved state needs its callback (stateless ones may change)."""
        keyed = self._keyed()
        for key, state in states.items():
            if key not in keyed:
                raise CanterError(f"the checkpoint has state for callback {key.split('#')[0]} but this run has no "
                                  "such callback; resume with the same callbacks")
            keyed[key].load_state_dict(state)


def _import(path: str, what: str) -> Any:
    from canter.registry import import_object

    if not isinstance(path, str) or ":" not in path:
        raise CanterError(f"{what} must be an import path 'module:name', got {path!r}")
    return import_object(path)


def check_callback_config(callbacks: list, hooks: dict) -> None:
    """Validate the shape of ``callbacks``/``hooks`` config values (imports happen at build time)."""
    for entry in callbacks:
        if isinstance(entry, dict):
            if len(entry) != 1 or not isinstance(next(iter(entry.values())), (dict, type(None))):
                raise CanterError(f"a 'callbacks' mapping entry must be {{'module:Name': {{kwargs}}}}, got {entry!r}")
            entry = next(iter(entry))
        module, _, name = str(entry).replace(":", ".").rpartition(".")
        if name in SB3_CALLBACKS and module.split(".")[0] in ("", "stable_baselines3"):  # SB3's, not a user's class
            raise CanterError(f"'callbacks' entry {entry!r} is a Stable-Baselines3 callback, which canter does not "
                              f"call; use {SB3_CALLBACKS[name]}")
        if not isinstance(entry, str) or ":" not in entry:
            raise CanterError(f"'callbacks' entries must be import paths 'module:Name', got {entry!r}")
    for hook, paths in hooks.items():
        if hook not in HOOKS:
            raise unknown("hook in 'hooks'", str(hook), HOOKS)
        for path in paths if isinstance(paths, list) else [paths]:
            if not isinstance(path, str) or ":" not in path:
                raise CanterError(f"'hooks.{hook}' must be an import path 'module:function', got {path!r}")


def config_callbacks(callbacks: list, hooks: dict) -> list[Any]:
    """Import and build the callbacks and hook functions named in a run config."""
    check_callback_config(callbacks, hooks)
    out: list[Any] = []
    for entry in callbacks:
        path, kwargs = (next(iter(entry.items())) if isinstance(entry, dict) else (entry, None))
        factory = _import(path, "a 'callbacks' entry")
        # only a class with hook methods is called: a resumed run's config comes from its checkpoint's JSON,
        # which must not be able to call any function (os:system) or class (subprocess:Popen) with its kwargs
        # (a Callback subclass's hooks: those it overrides, as Hooks.add counts them; Callback's own do nothing)
        if isinstance(factory, type) and not any(callable(getattr(factory, h, None)) and not (
                issubclass(factory, Callback) and getattr(factory, h) is getattr(Callback, h)) for h in HOOKS):
            # the methods it has named (its only one misspelt: on_evalute), as Python's callbacks= says; never built
            raise CanterError(f"a 'callbacks' entry must name a callback class: {no_hooks_error(factory)}")
        if not isinstance(factory, type):
            raise CanterError(f"a 'callbacks' entry must name a callback class (a subclass of canter.callbacks."
                              f"Callback, or a class with hook methods {', '.join(HOOKS)}), got '{path}'")
        try:
            out.append(factory(**(kwargs or {})))
        except (TypeError, CanterError) as exc:  # a misspelled argument is answered with the closest one
            raise CanterError(f"cannot build callback '{path}': {exc}{keyword_hint(factory, exc)}") from None
        except Exception as exc:  # the user's class refuses its arguments (a ValueError...): one line, as for models
            from canter.errors import raised_in

            raise CanterError(f"cannot build callback '{path}': {raised_in(exc)}") from None
    for hook, paths in hooks.items():
        for path in paths if isinstance(paths, list) else [paths]:
            out.append(FunctionHook(hook, _import(path, f"'hooks.{hook}'")))
    return out


#: Stable-Baselines3's callbacks, by class name -> what canter does instead
SB3_CALLBACKS = {
    "StopTrainingOnRewardThreshold": "target_reward=R", "EvalCallback": "eval_every=N and eval_episodes=E (N env steps "
    "of all the copies: its eval_freq x n_envs; each new best is saved as checkpoints/best; its deterministic=False: "
    "eval_deterministic=false)", "CheckpointCallback": "checkpoint_every=N (checkpoints/step-N; N env steps of all the "
    "copies: its save_freq x n_envs)",
    "StopTrainingOnNoModelImprovement": "early_stopping=P with P its max_no_improvement_evals + 1 (it stops after more "
    "than max_no_improvement_evals evaluations without a new best, canter after P)", "ProgressBarCallback": "quiet=False",
    "CallbackList": "a list of canter callbacks", "StopTrainingOnMaxEpisodes": "a Callback whose should_stop reads "
    "trainer.episode_count", "EveryNTimesteps": "a Callback whose after_update reads trainer.step",
}


def _sb3_callback(cb: Any) -> CanterError | None:
    """The error for a Stable-Baselines3 callback (its ``BaseCallback``'s ``_on_step``), which no canter hook calls;
    None for anything else."""
    if not (hasattr(cb, "_on_step") and hasattr(cb, "init_callback")):
        return None
    name = type(cb).__name__
    instead = SB3_CALLBACKS.get(name, "a canter Callback (docs/training-control.md): its on_env_step(trainer, step) "
                                      "is _on_step (step: self.locals), the other hooks run between iterations "
                                      "(trainer.agent is SB3's self.model)")
    return CanterError(f"{name} is a Stable-Baselines3 callback, which canter does not call (its hooks are "
                       f"{', '.join(HOOKS)}); use {instead}")


def as_callbacks(callbacks: Iterable[Any] | None = None, hooks: dict[str, Any] | None = None) -> list[Any]:
    """Python-side callbacks: objects as given (one object alone, as Stable-Baselines3's ``callback``
    takes it, or a list), ``hooks`` (name -> callable or list) wrapped."""
    for cb in callbacks if isinstance(callbacks, (list, tuple)) else [callbacks]:
        if _sb3_callback(cb) is not None:
            raise _sb3_callback(cb)
    if callbacks is not None and not isinstance(callbacks, (list, tuple)):
        if not any(hasattr(callbacks, h) for h in HOOKS):
            raise CanterError(f"callbacks takes a list of callback objects, got {type(callbacks).__name__}")
        callbacks = [callbacks]  # one callback object (a class is refused below)
    if hooks is not None and not isinstance(hooks, dict):
        raise CanterError(f"hooks takes a dict of hook name -> callable (or list of callables), got "
                          f"{type(hooks).__name__}; hooks: {', '.join(HOOKS)}")
    out = list(callbacks or [])
    for cb in out:
        if isinstance(cb, type):  # its hooks would be called unbound, the trainer taken for ``self``
            raise CanterError(f"callbacks takes callback objects, not classes: pass {cb.__name__}() instead of "
                              f"{cb.__name__}")
        if isinstance(cb, str):  # the YAML form: it was 'has none of the hook methods'
            raise CanterError(f"callbacks takes callback objects; a path such as {cb!r} goes in the run config's "
                              f"callbacks (YAML, or sets=\"callbacks=[{cb}]\")")
        if callable(cb) and not any(_overrides(cb, h) for h in HOOKS):  # a function: which hook it is for is unsaid
            raise CanterError(f"callbacks takes callback objects, got the function {getattr(cb, '__name__', cb)!r}; "
                              f"a function goes in hooks, by the hook it is for: hooks={{'after_update': fn}} "
                              f"(hooks: {', '.join(HOOKS)})")
    for hook, fns in (hooks or {}).items():
        for fn in fns if isinstance(fns, (list, tuple)) else [fns]:
            out.append(FunctionHook(hook, fn))
    return out


_STOP_CRITERIA = frozenset({"EarlyStopping", "Patience", "PlateauLR", "StepBudget", "TargetReward", "TimeBudget",
                            "builtin_callbacks", "monitored_value"})


def __getattr__(name: str) -> Any:
    """The built-in callbacks of :mod:`canter.stop_criteria`, importable from here too (``callbacks:
    ["canter.callbacks:EarlyStopping"]``); looked up when asked for, since that module imports this one's
    :class:`Callback` (an import here at the end made ``import canter.stop_criteria`` alone fail: a circular import)."""
    if name in _STOP_CRITERIA:
        import canter.stop_criteria as stop_criteria
        return getattr(stop_criteria, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names with the stop criteria :func:`__getattr__` gives (a mistyped
    ``canter.callbacks:EarlyStoping`` is answered "did you mean 'EarlyStopping'?" from this list)."""
    return sorted({*globals(), *_STOP_CRITERIA})
