"""A failed explorer that the Ray pool replaces is asked to close its env before it is killed, as the pool's own
close asks every explorer (``ray.kill`` runs no Python: an env that writes a file or holds a simulator on close was
left as it was); one hung in a call (explorer_timeout) is not asked, and a close that never answers holds the
replacement up for CLOSE_WAIT_SECONDS at most. Driven with a stand-in for Ray: no cluster needed."""
from __future__ import annotations

from types import SimpleNamespace

from canter.distributed import pool as pool_module
from canter.distributed.pool import RayPool


class _Ref:
    def __init__(self, value=None, done=True):
        self.value, self.done = value, done


def _pool(events: list, close_answers: bool = True) -> RayPool:
    """A one-explorer RayPool's bookkeeping, its explorer ``old`` recording close and kill in ``events``."""

    def close():
        events.append("close")
        return _Ref(done=close_answers)

    def wait(refs, num_returns=1, timeout=None):
        events.append(("wait", timeout))
        return [r for r in refs if r.done][:num_returns], []

    pool = object.__new__(RayPool)  # the pool's bookkeeping only: no actors, no Ray
    pool.ray = SimpleNamespace(exceptions=SimpleNamespace(RayError=RuntimeError), wait=wait,
                               kill=lambda actor, **k: events.append(("kill", actor.name)))
    old = SimpleNamespace(name="old", close=SimpleNamespace(remote=close))
    pool.count, pool.actors, pool.generation, pool.failures, pool.pids, pool.restarts = 1, [old], [0], [0], [5], 0
    pool._slot_version, pool._starting, pool._fresh, pool.in_flight, pool._built_at = [1], {}, set(), {}, [0.0]
    pool._answered, pool._slowest = [0.0], 0.0
    pool._spawn = lambda slot: SimpleNamespace(name="new", pid=SimpleNamespace(remote=lambda: "up"))
    return pool


def test_a_replaced_explorer_closes_its_env_before_it_is_killed():
    events: list = []
    pool = _pool(events)
    pool._replace(0, "ValueError: pole length must be positive")
    assert events == ["close", ("wait", pool_module.CLOSE_WAIT_SECONDS), ("kill", "old")]
    assert pool.actors[0].name == "new" and pool.restarts == 1


def test_a_close_that_never_answers_waits_no_longer_than_close_wait_seconds():
    events: list = []
    pool = _pool(events, close_answers=False)
    pool._replace(0, "RuntimeError: explorer died")
    assert events == ["close", ("wait", pool_module.CLOSE_WAIT_SECONDS), ("kill", "old")]


def test_an_explorer_that_cannot_be_asked_is_killed_all_the_same():
    events: list = []
    pool = _pool(events)
    pool.actors[0].close = SimpleNamespace(remote=lambda: (_ for _ in ()).throw(RuntimeError("actor handle gone")))
    pool._replace(0, "RuntimeError: explorer died")
    assert events == [("kill", "old")] and pool.actors[0].name == "new"


def test_a_hung_explorer_is_not_asked_to_close():
    """Its close would queue behind the call that never returns: only waiting CLOSE_WAIT_SECONDS for nothing."""
    events: list = []
    pool = _pool(events)
    pool._replace(0, "no rollout within 60 s", hung=True)
    assert events == [("kill", "old")]
