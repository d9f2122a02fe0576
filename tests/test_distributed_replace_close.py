"""A failed explorer that the Ray pool replaces is asked to close its env before it is killed, as the pool's own
close asks every explorer (``ray.kill`` runs no Python: an env that writes a file or holds a simulator on close was
left as it was), without the learner waiting for it: its close queues behind its rollouts still running (IMPALA,
APPO and Ape-X keep two per explorer), and the learner waited up to CLOSE_WAIT_SECONDS at each replacement (2.02 s
measured, CartPole with 20 ms steps and 100-step rollouts). It is killed once its close has returned, or
CLOSE_WAIT_SECONDS after it was asked, where the pool polls; at the latest when the pool closes. One hung in a call
(explorer_timeout) is not asked. Driven with a stand-in for Ray: no cluster needed."""
from __future__ import annotations

import time
from types import SimpleNamespace

from canter.distributed import pool as pool_module
from canter.distributed.pool import RayPool


class _Ref:
    def __init__(self, value=None, done=True):
        self.value, self.done = value, done


def _pool(events: list, close_answers: bool = True) -> RayPool:
    """A one-explorer RayPool's bookkeeping, its explorer ``old`` recording close and kill in ``events``; the
    stand-in's ``wait`` blocks out its timeout when fewer calls than asked for have finished, as Ray's does."""

    def close():
        events.append("close")
        return _Ref(done=close_answers)

    def wait(refs, num_returns=1, timeout=None):
        done = [r for r in refs if r.done][:num_returns]
        if len(done) < num_returns and timeout != 0:
            assert timeout is not None, "the stand-in refuses to wait forever"
            events.append(("wait", timeout))
            time.sleep(timeout)
        return done, []

    pool = object.__new__(RayPool)  # the pool's bookkeeping only: no actors, no Ray
    pool.ray = SimpleNamespace(exceptions=SimpleNamespace(RayError=RuntimeError), wait=wait,
                               kill=lambda actor, **k: events.append(("kill", actor.name)))
    old = SimpleNamespace(name="old", close=SimpleNamespace(remote=close))
    pool.count, pool.actors, pool.generation, pool.failures, pool.pids, pool.restarts = 1, [old], [0], [0], [5], 0
    pool._slot_version, pool._starting, pool._fresh, pool.in_flight, pool._built_at = [1], {}, set(), {}, [0.0]
    pool._answered, pool._slowest, pool._retiring, pool._owns_connection = [0.0], 0.0, [], False
    pool.run = SimpleNamespace(explorer_timeout=0)  # no explorer_timeout: only the closes are waited for
    pool._spawn = lambda slot: SimpleNamespace(name="new", pid=SimpleNamespace(remote=lambda: _Ref("up")),
                                               close=SimpleNamespace(remote=lambda: events.append("close new") or _Ref()))
    return pool


def _clock(monkeypatch) -> list[float]:
    """The pool's monotonic clock, set by hand (``now[0]``)."""
    now = [100.0]
    monkeypatch.setattr(pool_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    return now


def test_a_replaced_explorer_closes_its_env_and_is_killed_once_its_close_has_returned(monkeypatch):
    events: list = []
    now = _clock(monkeypatch)
    pool = _pool(events)
    pool._replace(0, "ValueError: pole length must be positive")
    assert events == ["close"]  # asked, not waited for
    assert pool.actors[0].name == "new" and pool.restarts == 1
    rollout = _Ref({"pid": 6})
    pool.in_flight[rollout] = (0, 1, {})
    now[0] += 0.1  # long before CLOSE_WAIT_SECONDS: its close has returned
    assert pool._next_ready() is not None
    assert events == ["close", ("kill", "old")] and pool._retiring == []


def test_the_learner_does_not_wait_for_a_replaced_explorers_close(monkeypatch):
    """A close that never returns (it waits behind a rollout): the replacement and the next rollout come at once;
    a poll with nothing finished waits for the rollouts and the close, until the close's limit at most; the old
    explorer is killed once CLOSE_WAIT_SECONDS have passed."""
    monkeypatch.setattr(pool_module, "CLOSE_WAIT_SECONDS", 1.0)  # (the stand-in's wait sleeps out its timeout)
    now = _clock(monkeypatch)
    events: list = []
    pool = _pool(events, close_answers=False)
    started = time.monotonic()
    pool._replace(0, "RuntimeError: explorer died")
    pool.in_flight.clear()  # (the replacement's readiness call: not this test's)
    ready = _Ref({"pid": 6})
    pool.in_flight[ready] = (0, 1, {})
    assert pool._next_ready() is ready
    assert time.monotonic() - started < 0.5, "the learner waited for the replaced explorer's close"
    assert events == ["close"]
    del pool.in_flight[ready]
    running = _Ref(done=False)
    pool.in_flight[running] = (0, 1, {})

    def wait(refs, num_returns=1, timeout=None):
        if timeout:  # the poll's wait for any one call: the rollout finishes meanwhile
            events.append(("wait", round(timeout, 6), len(refs)))
            running.done = True
        return [r for r in refs if r.done][:num_returns], []

    pool.ray.wait = wait
    now[0] += 0.4
    assert pool._next_ready() is running
    assert events == ["close", ("wait", 0.6, 2)]  # the rollout's call and the close's, until the close's limit
    now[0] += 0.6
    pool._reap()
    assert events[-1] == ("kill", "old") and pool._retiring == []


def test_an_explorer_that_cannot_be_asked_is_killed_all_the_same():
    events: list = []
    pool = _pool(events)
    pool.actors[0].close = SimpleNamespace(remote=lambda: (_ for _ in ()).throw(RuntimeError("actor handle gone")))
    pool._replace(0, "RuntimeError: explorer died")
    assert events == [("kill", "old")] and pool.actors[0].name == "new" and pool._retiring == []


def test_a_hung_explorer_is_not_asked_to_close():
    """Its close would queue behind the call that never returns: only waiting CLOSE_WAIT_SECONDS for nothing."""
    events: list = []
    pool = _pool(events)
    pool._replace(0, "no rollout within 60 s", hung=True)
    assert events == [("kill", "old")]


def test_the_pools_close_kills_a_replaced_explorer_still_closing(monkeypatch):
    """No actor outlives the pool: one replaced explorer's close still unanswered at the end of the run is waited
    for with the others' (CLOSE_WAIT_SECONDS in all), then killed with them."""
    monkeypatch.setattr(pool_module, "CLOSE_WAIT_SECONDS", 0.05)
    events: list = []
    pool = _pool(events, close_answers=False)
    pool._replace(0, "RuntimeError: explorer died")
    pool.close()
    assert events == ["close", "close new", ("wait", 0.05), ("kill", "new"), ("kill", "old")]
    assert pool._retiring == [] and pool.actors == []
