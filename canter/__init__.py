"""canter: deep reinforcement learning on PyTorch.

>>> import canter
>>> agent = canter.train("ppo", env="CartPole-v1", target_reward=475, seed=1)   # doctest: +SKIP
>>> agent.predict(obs)                                                          # doctest: +SKIP

``import canter`` itself is cheap: the public functions (and canter's subpackages, ``canter.envs``...)
are imported on first use (PEP 562), so ``canter --help`` and argument errors do not wait for torch.
"""
__version__ = "0.1.0"

import gc as _gc
import importlib as _importlib
import warnings as _warnings
from types import ModuleType as _ModuleType
from typing import Any as _Any

# NumPy's floating-point warnings from canter's own NumPy passes (an overflowing update, NaN weights)
# would print beside the divergence guard's one-line report; the guard reports what went non-finite.
# Appended, so a user's own filters (``-W error``) still come first; warnings from the user's code
# (an env's arithmetic) are untouched.
_warnings.filterwarnings("ignore", message=r"(overflow|invalid value|divide by zero) encountered",
                         category=RuntimeWarning, module=r"canter\.", append=True)

#: where each public name is defined (imported when first asked for)
_PUBLIC = {"evaluate": "canter.trainers.evaluation:evaluate_agent", "load": "canter.api", "make_agent": "canter.api",
           "make_trainer": "canter.api", "resume": "canter.api",
           "train": "canter.api", "lookup": "canter.registry", "names": "canter.registry",
           "register": "canter.registry", "CanterError": "canter.errors", "CanterWarning": "canter.errors"}
#: set by the ``canter`` console script: ``gc.freeze()`` after each :func:`_import_deferring_gc`
_freeze_imports = False


def _import_deferring_gc(*modules: str) -> _ModuleType:
    """Import ``modules`` with the garbage collector paused (a process that had it disabled keeps it
    disabled), and return the last; under the console script, ``gc.freeze()`` after.

    Importing torch creates hundreds of thousands of objects, and the collector's full passes over
    them cost ~0.2 s of the ~1.1 s import on the 2-core development machine (1.09-1.16 s against
    0.92-0.96 with collection deferred). Nothing created by an import is garbage, so collection waits
    until the imports are done; frozen, later full passes of a CLI command skip those objects.
    Python's global random state is put back after (``canter.train``'s first call changed it otherwise).
    """
    import random

    was_enabled = _gc.isenabled()
    _gc.disable()
    state = random.getstate()  # rich (the console logger) draws getrandbits(24) as it imports: the caller's stream
    try:
        # NumPy first, on its own: torch's extension imports it while it initialises and clears whatever
        # that import raises, so a Ctrl-C landing inside it was swallowed and left a half-imported NumPy
        # (no ``np.matrix``) that the command tripped over later (a resumed run's first step)
        _importlib.import_module("numpy")
        return [_importlib.import_module(module) for module in modules][-1]
    finally:
        random.setstate(state)
        if _freeze_imports:
            _gc.freeze()
        if was_enabled:
            _gc.enable()


def __getattr__(name: str) -> _Any:
    """PEP 562: the public API and canter's subpackages (``canter.envs``), imported on first use."""
    module = _PUBLIC.get(name)
    if module is not None:
        module, _, attr = module.partition(":")  # "module:attr" where the function has another name there
        value = getattr(_import_deferring_gc(module), attr or name)
        globals()[name] = value  # later lookups do not come here
        return value
    if not name.startswith("_"):
        try:  # as when importing canter imported them all
            return _import_deferring_gc(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":  # the submodule exists; something it imports does not
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names, with the public API that is not imported yet."""
    return sorted({*globals(), *_PUBLIC})


__all__ = ["CanterError", "CanterWarning", "__version__", "evaluate", "load", "lookup", "make_agent", "make_trainer", "names", "register", "resume", "train"]
