"""The Ray explorer pool's bookkeeping, driven with a stand-in for Ray (no cluster): replacing a dead
explorer, a replaced explorer's late result, the order finished rollouts are handed over in, the seeds of a
resumed run's replacements, the reward returns of a replacement's first rollout, and explorers that return no
rollout within explorer_timeout."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import canter
from canter.config import resolve_config


def test_a_replaced_explorers_late_result_counts_no_second_replacement(monkeypatch):
    """An explorer's rollout raised (the pool replaced it) while its next queued rollout had already
    finished on the old process: that late result is still learned from, and one replacement counts
    once in explorer_restarts (once, the pool took the process change for a Ray restart and counted
    2). Driven with a stand-in for Ray: no cluster needed."""
    from types import SimpleNamespace

    from canter.distributed import pool as pool_module
    from canter.distributed.pool import RayPool

    class RayError(Exception):
        pass

    monkeypatch.setattr(pool_module, "STEADY_SECONDS", 0.0)  # any result of the current explorer clears its failures
    outcomes = {"A": RayError("simulated env crash"), "B": {"pid": 100}, "C": {"pid": 200}, "up": 200}

    def get(ref):
        if isinstance(outcomes[ref], Exception):
            raise outcomes[ref]
        return outcomes[ref]

    pool = object.__new__(RayPool)  # the pool's bookkeeping only: no actors, no Ray
    pool.ray = SimpleNamespace(exceptions=SimpleNamespace(RayError=RayError), get=get, kill=lambda *a, **k: None)
    pool.count, pool.actors, pool.generation, pool.failures, pool.pids, pool.restarts = 1, ["old"], [0], [0], [None], 0
    pool._built_at, pool._answered, pool._slowest = [0.0], [0.0], 0.0
    pool._slot_version, pool._starting, pool._fresh = [1], {}, set()
    pool._spawn = lambda slot: SimpleNamespace(pid=SimpleNamespace(remote=lambda: "up"))  # the replacement
    pool.submit = lambda slot, **kw: None
    pool.in_flight = {"A": (0, 0, {}), "B": (0, 0, {})}  # two rollouts queued on the first process (pid 100)
    assert pool._receive("A") == (0, None)  # it raised: replaced (generation 1)
    assert pool._receive("B")[1]["pid"] == 100  # the old process had finished the next one: still learned from
    assert pool.failures == [1]  # the old process's late success is no sign the replacement works
    assert pool._receive("up") == (0, None)  # the replacement is up
    pool.in_flight["C"] = (0, 1, {})
    assert pool._receive("C")[1]["pid"] == 200  # the replacement's first result
    assert pool.restarts == 1 and pool.pids == [200] and pool.failures == [0]


def test_a_dead_explorers_lost_rollouts_run_on_a_fresh_replacement_with_the_weights_of_when_it_is_up(monkeypatch):
    """Ray restarted a killed explorer (max_restarts) and re-ran its lost rollouts (max_task_retries): the
    restarted actor re-ran its constructor with the run's start seeds (its first rollout began from the
    run's very first observations) and the lost calls with the weights they were first given (measured:
    IMPALA, 2 explorers, a SIGKILL: the next rollouts were 154 and 159 versions old). Ray now restarts
    nothing; the pool replaces the dead explorer (a fresh seed block) and sends the lost rollouts once the
    replacement is up, with the weights of then. Driven with a stand-in for Ray: no cluster needed."""
    from types import SimpleNamespace

    from canter.distributed import pool as pool_module

    class RayError(Exception):
        pass

    class Ref:
        def __init__(self, value):
            self.value = value

    class Actor:
        def __init__(self, generation):
            self.generation, self.rollouts = generation, []
            self.rollout = SimpleNamespace(remote=self._rollout)
            self.pid = SimpleNamespace(remote=lambda: Ref(1000 + generation))

        def _rollout(self, weights_ref, version, **kw):
            self.rollouts.append(version)
            return Ref({"pid": 1000 + self.generation, "version": version})

    options = {}

    def remote(cls):
        def with_options(**kw):
            options.update(kw)
            return SimpleNamespace(remote=lambda slot, count, run, cfg, generation, spaces: Actor(generation))
        return SimpleNamespace(options=with_options)

    def get(ref, timeout=None):
        if isinstance(ref.value, Exception):
            raise ref.value
        return ref.value

    ray = SimpleNamespace(exceptions=SimpleNamespace(RayError=RayError, GetTimeoutError=TimeoutError),
                          get=get, put=lambda w: Ref(w),
                          kill=lambda *a, **k: None, remote=remote, cluster_resources=lambda: {"CPU": 2.0})
    monkeypatch.setattr(pool_module, "connect", lambda address: (ray, False))
    monkeypatch.setattr(pool_module, "STEADY_SECONDS", 0.0)  # any result of the current explorer clears its failures
    run, cfg = resolve_config("impala", "CartPole-v1", n_envs=2)
    pool = pool_module.RayPool(run, cfg, 1)
    assert options["max_restarts"] == 0 and options["max_task_retries"] == 0  # Ray re-runs nothing
    pool.publish({}, 1)
    pool.submit(0, n_steps=8)
    pool.submit(0, n_steps=8)
    lost = list(pool.in_flight)
    for ref in lost:  # the explorer's process died: both queued rollouts are lost
        ref.value = RayError("The actor is dead because its worker process has died.")
    assert pool._receive(lost[0]) == (0, None)
    assert pool.generation == [1] and pool.restarts == 1  # a replacement, with a fresh seed block
    pool.publish({}, 2)
    assert pool._receive(lost[1]) == (0, None)
    pool.publish({}, 3)  # the learner goes on with the other explorers while the replacement starts
    pool.submit(0, n_steps=8)  # a rollout the learner queues meanwhile waits for the replacement as well
    pool.publish({}, 4)
    assert pool.actors[0].rollouts == []
    (ready,) = pool.in_flight  # the replacement is up
    assert pool._receive(ready) == (0, None) and pool.pids == [1001]
    assert pool.actors[0].rollouts == [4, 4, 4]  # all three carry the weights of when it was up
    results = [pool._receive(ref)[1] for ref in list(pool.in_flight)]
    assert [r["version"] for r in results] == [4, 4, 4] and pool.restarts == 1 and pool.failures == [0]


def test_explorers_that_fail_soon_after_each_result_stop_the_run(monkeypatch):
    """An env that raises at its 50th step, with 32 steps a rollout: each replacement's first rollout came
    back, its second raised. Each result cleared the slot's failures, so the run replaced explorers forever
    (the learner got one rollout per replacement, a few seconds each) and never stopped. Results from an
    explorer that has not run STEADY_SECONDS clear nothing now: the 4th failure stops the run, naming the
    env's error. Driven with a stand-in for Ray: no cluster needed."""
    from types import SimpleNamespace

    from canter.distributed import pool as pool_module
    from canter.errors import ExplorerError

    class RayError(Exception):
        pass

    class Ref:
        def __init__(self, value):
            self.value = value

    class Actor:  # its first rollout returns, every later one raises
        def __init__(self, generation):
            self.generation, self.calls = generation, 0
            self.rollout = SimpleNamespace(remote=self._rollout)
            self.pid = SimpleNamespace(remote=lambda: Ref(1000 + generation))

        def _rollout(self, weights_ref, version, **kw):
            self.calls += 1
            if self.calls > 1:
                return Ref(RayError("RuntimeError: simulated simulator crash at step 50"))
            none = np.zeros(0, np.int64)
            return Ref({"pid": 1000 + self.generation, "version": version, "index": 0, "episode_returns": none,
                        "episode_lengths": none, "episode_envs": none})

    def remote(cls):
        return SimpleNamespace(options=lambda **kw: SimpleNamespace(
            remote=lambda slot, count, run, cfg, generation, spaces: Actor(generation)))

    def get(ref, timeout=None):
        if isinstance(ref.value, Exception):
            raise ref.value
        return ref.value

    def wait(refs, num_returns=1, timeout=None):
        return refs[:num_returns], refs[num_returns:]

    ray = SimpleNamespace(exceptions=SimpleNamespace(RayError=RayError, GetTimeoutError=TimeoutError),
                          get=get, put=lambda w: Ref(w), wait=wait,
                          kill=lambda *a, **k: None, remote=remote, cluster_resources=lambda: {"CPU": 2.0})
    monkeypatch.setattr(pool_module, "connect", lambda address: (ray, False))
    run, cfg = resolve_config("impala", "CartPole-v1", n_envs=2)
    pool = pool_module.RayPool(run, cfg, 1)
    pool.publish({}, 1)
    results = 0
    with pytest.raises(ExplorerError, match="^explorer 0 failed 4 times in a row; last error: RuntimeError: "
                                            "simulated simulator crash at step 50$"):
        for _ in range(100):  # as the asynchronous learner: new work after each result
            pool.submit(0, n_steps=32)
            pool.wait()
            results += 1
    assert results == 4 and pool.restarts == 3  # the first explorer's result and each replacement's


def test_the_pool_hands_over_the_earliest_submitted_of_the_finished_rollouts():
    """``ray.wait(refs, num_returns=1)`` returns any one of the finished calls, not the first in its list
    (measured with a real cluster): an explorer's rollouts reached the learner out of order (22 of 198 in an
    IMPALA run with 2 explorers), one waited for seconds (lag 86), and with Ape-X an explorer whose results
    were passed over got no new work (6 rollouts from one, 34 from the other). Driven with a stand-in for
    Ray that, as Ray may, returns the last finished call when asked for one."""
    from types import SimpleNamespace

    from canter.distributed.pool import RayPool

    done = {"a1", "b1", "a2"}  # explorer a's two queued rollouts and b's first have finished

    def wait(refs, num_returns=1, timeout=None):
        ready = [r for r in refs if r in done]
        return (ready[-num_returns:] if num_returns == 1 else ready[:num_returns]), []

    def result(ref):
        slot = 0 if ref[0] == "a" else 1
        return {"pid": 10 + slot, "index": slot, "episode_returns": np.zeros(0),
                "episode_lengths": np.zeros(0, np.int64), "episode_envs": np.zeros(0, np.int64), "name": ref}

    pool = object.__new__(RayPool)  # the pool's bookkeeping only: no actors, no Ray
    pool.ray = SimpleNamespace(exceptions=SimpleNamespace(RayError=RuntimeError), get=result, wait=wait)
    pool.generation, pool.failures, pool.pids, pool.restarts = [0, 0], [0, 0], [10, 11], 0
    pool._fresh, pool._built_at, pool._answered, pool._slowest, pool._starting = set(), [0.0, 0.0], [0.0, 0.0], 0.0, {}
    pool.count, pool.run, pool._retiring = 2, SimpleNamespace(explorer_timeout=0), []
    pool.in_flight = {ref: (0 if ref[0] == "a" else 1, 0, {}) for ref in ("a1", "b1", "a2", "b2")}
    assert [pool.wait()[1]["name"] for _ in range(3)] == ["a1", "b1", "a2"]


def test_a_resumed_runs_replacement_explorer_does_not_replay_the_interrupted_runs_replacement(monkeypatch):
    """A resumed Ray run resets its explorers' envs from a new seed (fresh episodes), but a replacement it
    made later was built from the run's seed: slot i's g-th replacement got seed + i * n_envs + g *
    100,000,007, the very seeds of the interrupted run's g-th replacement of that slot, and replayed its
    episodes. Driven with a stand-in for Ray: no cluster needed."""
    from types import SimpleNamespace

    from canter.distributed import pool as pool_module

    built = []

    def remote(cls):
        def actor(slot, count, run, cfg, generation, spaces):
            built.append((generation, run.seed))
            return SimpleNamespace(reset=SimpleNamespace(remote=lambda seed: None),
                                   pid=SimpleNamespace(remote=lambda: None))
        return SimpleNamespace(options=lambda **kw: SimpleNamespace(remote=actor))

    ray = SimpleNamespace(get=lambda refs, timeout=None: refs, kill=lambda *a, **k: None, remote=remote,
                          cluster_resources=lambda: {"CPU": 2.0})
    monkeypatch.setattr(pool_module, "connect", lambda address: (ray, False))
    run, cfg = resolve_config("impala", "CartPole-v1", n_envs=2, seed=3)
    pool = pool_module.RayPool(run, cfg, 1)
    pool.reset(3 + 7_777_777 + 4096)  # a resumed run's fresh episodes (Trainer.load_resume_state)
    pool._replace(0, "RuntimeError: explorer died")
    assert built == [(0, 3), (1, 3 + 7_777_777 + 4096)]


def test_a_replacement_explorers_first_rollout_starts_its_envs_returns_from_zero():
    """With normalize_reward, the learner keeps one running discounted return per env. A replacement
    explorer's envs start new episodes, but their returns went on from the dead explorer's unfinished
    episodes (no done between them), as if the new episodes continued the old ones; a resume's fresh
    episodes zero them (reset_returns). The pool marks a replacement's first rollout and the learner
    zeroes that explorer's returns. Driven with a stand-in for Ray and an in-process explorer's rollout."""
    from types import SimpleNamespace

    from canter.distributed.pool import RayPool

    trainer = canter.make_trainer("impala", "CartPole-v1", n_envs=2, seed=0, normalize_reward=True, max_steps=10**4)
    try:
        rollout = trainer.pool.explorer.rollout(None, 0, n_steps=2)
        assert not rollout["dones"].any()
        pool = object.__new__(RayPool)  # the pool's bookkeeping only: no actors, no Ray
        pool.ray = SimpleNamespace(exceptions=SimpleNamespace(RayError=RuntimeError), kill=lambda *a, **k: None,
                                   get=lambda ref: rollout if ref == "rollout" else 7)
        pool.count, pool.actors, pool.generation, pool.failures, pool.pids, pool.restarts = 1, ["old"], [0], [0], [5], 0
        pool._slot_version, pool._starting, pool._fresh, pool.in_flight, pool._built_at = [1], {}, set(), {}, [0.0]
        pool._answered, pool._slowest = [0.0], 0.0
        pool._spawn = lambda slot: SimpleNamespace(pid=SimpleNamespace(remote=lambda: "up"))
        pool.submit = lambda slot, **kw: None
        pool._replace(0, "RuntimeError: explorer died")
        pool._receive("up")
        pool.in_flight["rollout"] = (0, 1, {})
        _, result = pool._receive("rollout")  # the replacement's first rollout
        trainer.agent._returns[:] = 40.0  # the dead explorer's episodes, 40 steps in
        trainer.receive([result])
        scaled = trainer.rewards_of(0, result)
        assert trainer.agent._returns.tolist() == pytest.approx([1 + trainer.agent.gamma] * 2)
        assert scaled.shape == (2, 2)
    finally:
        trainer.close()


def _stand_in_ray(monkeypatch, hangs, explorer_timeout, starts=True):
    """A one-explorer RayPool on a stand-in for Ray whose explorer ``g`` (its ``g``-th replacement) never returns a
    rollout when ``hangs(g)`` (never starts unless ``starts``): the stand-in's ``wait`` and ``get`` sleep out a
    timeout and refuse to wait forever."""
    import time
    from types import SimpleNamespace

    from canter.distributed import pool as pool_module

    class Ref:
        def __init__(self, value, done=True):
            self.value, self.done = value, done

    class Actor:
        def __init__(self, generation):
            self.generation = generation
            self.rollout = SimpleNamespace(remote=self._rollout)
            self.pid = SimpleNamespace(remote=lambda: Ref(1000 + generation, done=starts))

        def _rollout(self, weights_ref, version, **kw):
            none = np.zeros(0, np.int64)
            return Ref({"pid": 1000 + self.generation, "version": version, "index": 0, "seconds": 0.001,
                        "episode_returns": none, "episode_lengths": none, "episode_envs": none},
                       done=not hangs(self.generation))

    def wait(refs, num_returns=1, timeout=None):
        ready = [r for r in refs if r.done]
        assert ready or timeout is not None, "the pool would wait forever for a hung explorer"
        if not ready:
            time.sleep(timeout)
        return ready[:num_returns], []

    def get(ref, timeout=None):
        if not ref.done:
            assert timeout is not None, "the pool would wait forever for a hung explorer"
            time.sleep(timeout)
            raise TimeoutError
        return ref.value

    killed = []
    ray = SimpleNamespace(exceptions=SimpleNamespace(RayError=RuntimeError, GetTimeoutError=TimeoutError),
                          get=get, wait=wait,
                          put=lambda w: Ref(w), kill=lambda actor, **k: killed.append(actor.generation),
                          remote=lambda cls: SimpleNamespace(options=lambda **kw: SimpleNamespace(
                              remote=lambda slot, count, run, cfg, generation, spaces: Actor(generation))),
                          cluster_resources=lambda: {"CPU": 2.0})
    monkeypatch.setattr(pool_module, "connect", lambda address: (ray, False))
    run, cfg = resolve_config("ppo", "CartPole-v1", n_envs=2, explorer_timeout=explorer_timeout)
    pool = pool_module.RayPool(run, cfg, 1)
    pool.publish({}, 1)
    return pool, killed


def test_an_explorer_that_never_starts_stops_the_run_with_one_line(monkeypatch):
    """An env whose constructor never returns (a simulator that cannot be reached) left make_trainer waiting for its
    explorers forever; a new explorer gets explorer_timeout, and at least MIN_TIMEOUT_SECONDS (shortened here)."""
    from canter.distributed import pool as pool_module
    from canter.errors import ExplorerError

    monkeypatch.setattr(pool_module, "MIN_TIMEOUT_SECONDS", 0.05)
    with pytest.raises(ExplorerError, match=r"^explorer 0 could not start: no answer within 0.05 s "
                                            r"\(explorer_timeout: 0.01, and at least 0.05 s to start\)$"):
        _stand_in_ray(monkeypatch, lambda generation: False, explorer_timeout=0.01, starts=False)


def test_an_explorer_whose_rollout_never_returns_is_replaced_after_explorer_timeout(monkeypatch, caplog):
    """An explorer whose env's step() never returns (a deadlocked simulator) never failed: the synchronous
    learner waited for its rollout forever. After ``explorer_timeout`` seconds without a rollout it is killed and
    replaced as a crashed one is, and the rollout runs on the replacement with the weights of then. Driven with a
    stand-in for Ray: no cluster needed."""
    pool, killed = _stand_in_ray(monkeypatch, lambda generation: generation == 0, explorer_timeout=0.05)
    (result,) = pool.gather(n_steps=8)
    assert result["pid"] == 1001 and result["version"] == 1  # the replacement's, with the current weights
    assert killed == [0] and pool.restarts == 1 and pool.failures == [1] and not pool.in_flight
    assert "explorer 0 failed: no rollout within 0.05 s (explorer_timeout: 0.05); starting a replacement" in [
        r.getMessage() for r in caplog.records]


def test_an_explorer_slot_that_hangs_every_time_stops_the_run(monkeypatch):
    """Each replacement hangs too: the 4th timeout in a row stops the run with one line, as crashes do."""
    from canter.errors import ExplorerError

    pool, killed = _stand_in_ray(monkeypatch, lambda generation: True, explorer_timeout=0.02)
    with pytest.raises(ExplorerError, match=r"^explorer 0 failed 4 times in a row; last error: no rollout within "
                                            r"0.02 s \(explorer_timeout: 0.02\)$"):
        pool.gather(n_steps=8)
    assert killed == [0, 1, 2]  # (the last is killed when the run closes its pool)


def test_explorer_timeout_limits(monkeypatch):
    """null: 10x the slowest rollout so far, at least 60 s, 600 s before the first; a value: that, and at least
    60 s for a new explorer to start; 0: none."""
    pool, _ = _stand_in_ray(monkeypatch, lambda generation: False, explorer_timeout=None)
    assert pool.time_limit(0) == 600
    pool.gather(n_steps=8)  # a rollout of 0.001 s
    assert pool.time_limit(0) == 60
    pool._slowest = 30.0
    assert pool.time_limit(0) == 300
    pool.run = dataclasses.replace(pool.run, explorer_timeout=5.0)
    assert pool.time_limit(0) == 5
    pool._starting[0] = []  # a replacement starting
    assert pool.time_limit(0) == 60
    pool.run = dataclasses.replace(pool.run, explorer_timeout=0.0)
    assert pool.time_limit(0) is None
