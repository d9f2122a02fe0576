"""canter: deep reinforcement learning on PyTorch.

>>> import canter
>>> agent = canter.train("ppo", env="CartPole-v1", target_reward=475, seed=1)   # doctest: +SKIP
>>> agent.predict(obs)                                                          # doctest: +SKIP
"""
__version__ = "0.1.0"

import gc as _gc
import warnings as _warnings

# NumPy's floating-point warnings from canter's own NumPy passes (an overflowing update, NaN weights)
# would print beside the divergence guard's one-line report; the guard reports what went non-finite.
# Appended, so a user's own filters (``-W error``) still come first; warnings from the user's code
# (an env's arithmetic) are untouched.
_warnings.filterwarnings("ignore", message=r"(overflow|invalid value|divide by zero) encountered",
                         category=RuntimeWarning, module=r"canter\.", append=True)

# Importing torch creates hundreds of thousands of objects, and the garbage collector's full passes
# over them cost ~0.2 s of the ~1.1 s import on the 2-core development machine (1.09-1.16 s against
# 0.92-0.96 with collection deferred). Nothing created here is garbage, so collection waits until
# the imports are done; a process that had it disabled keeps it disabled.
_gc_was_enabled = _gc.isenabled()
_gc.disable()
try:
    from canter.api import load, make_agent, make_trainer, resume, train  # noqa: E402
    from canter.registry import lookup, names, register  # noqa: E402
finally:
    if _gc_was_enabled:
        _gc.enable()

__all__ = ["__version__", "load", "lookup", "make_agent", "make_trainer", "names", "register", "resume", "train"]
