"""Garbage the parent holds when async workers start is collected by the parent, not by a forked worker: a worker's
garbage collection finalized its forked copy of the parent's unreachable cycles (in the full suite a worker
segfaulted while collecting, in ale-py, during an async Atari env's start)."""
from __future__ import annotations

import gc
import os

from canter.envs import make_vec_env


class _Cycle:
    """An unreachable cycle whose finalizer notes the process it ran in."""

    def __init__(self, seen: list[int]) -> None:
        self.me, self.seen = self, seen

    def __del__(self) -> None:
        self.seen.append(os.getpid())


def test_the_parents_garbage_is_collected_before_the_workers_fork():
    seen: list[int] = []
    enabled = gc.isenabled()
    gc.disable()  # no automatic collection: only a deliberate one finalizes the cycle
    try:
        _Cycle(seen)
        env = make_vec_env("CartPole-v1", 2, "async")
        try:
            assert seen == [os.getpid()]  # finalized once, in the parent, before the workers started
        finally:
            env.close()
    finally:
        if enabled:
            gc.enable()
