"""Seeded construction of algorithms: ``PPO(obs_space, act_space, config, seed=3)`` initialises its weights from
``seed``, whatever torch's global stream held, and leaves the caller's global random states as they were.

Models initialise their weights from torch's global generator. The trainer seeds that itself
(:func:`canter.api.make_agent`: ``seed_everything(run.seed)``, then the algorithm with ``seed=run.seed``), and
builds inside :func:`seeded_by_caller`, so its runs are as they were: the global streams are left where the
initialisation took them. An algorithm built directly with a seed gets the same weights as a trainer's of that
seed at the same torch thread count (the trainer builds at the run's ``torch_threads``; orthogonal initialisation's
QR rounds differently at another count: PPO's 64x64 layer differed by ~2e-7 at 2 threads against 1): the build seeds Python's, NumPy's and torch's global generators with it (``seed_everything``) under
:func:`canter.utils.global_rngs_kept`. Built without a seed (``seed=None``), the weights come from the global
stream as it is, and advance it (two unseeded builds differ; Stable-Baselines3's ``seed=None``)."""
from __future__ import annotations

import contextlib
from abc import ABCMeta
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

#: the state of the algorithm build in progress in this thread: None (none), an ExitStack (an outermost build whose
#: ``Algorithm.__init__`` has not run yet: it seeds into the stack), or "global" (weights from the global streams
#: as they are: the caller seeded them, or the outermost build seeded already, so a nested build does not reseed)
_BUILD: ContextVar[Any] = ContextVar("canter_algorithm_build", default=None)


class SeededBuild(ABCMeta):
    """Metaclass of :class:`~canter.algorithms.base.Algorithm`: the outermost construction of an algorithm holds
    the place where its ``__init__`` seeds (:func:`seed_init`) and gives the global random states back after it."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        """Build the algorithm, its weights seeded by its ``seed`` argument (see the module's docstring)."""
        if _BUILD.get() is not None:
            return super().__call__(*args, **kwargs)
        with contextlib.ExitStack() as stack:
            token = _BUILD.set(stack)
            try:
                return super().__call__(*args, **kwargs)
            finally:
                _BUILD.reset(token)


def seed_init(seed: int | None) -> None:
    """Called by ``Algorithm.__init__`` before any weights exist: in an outermost build with a ``seed``, seed the
    global generators with it, their states given back when the build ends; else nothing."""
    from canter.utils import global_rngs_kept, seed_everything

    stack = _BUILD.get()
    if isinstance(stack, contextlib.ExitStack):
        _BUILD.set("global")  # nested builds (an algorithm made inside this one's __init__) draw on, unseeded
        if seed is not None:
            stack.enter_context(global_rngs_kept())
            seed_everything(seed)


@contextlib.contextmanager
def seeded_by_caller() -> Iterator[None]:
    """Algorithms built in this block take their weights from the global streams as they are, and leave them
    advanced: for a caller that seeded them for the build and for what follows (the trainer)."""
    token = _BUILD.set("global")
    try:
        yield
    finally:
        _BUILD.reset(token)
