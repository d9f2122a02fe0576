"""How explorer failures reach the user: one line naming what the explorer raised (no cluster needed;
the runs that make explorers fail are in test_distributed_ray.py)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from canter.errors import CanterError

exceptions = pytest.importorskip("ray.exceptions")

from canter.distributed.pool import failure_reason  # noqa: E402


def test_an_explorers_failure_is_told_in_one_line_from_what_it_raised():
    """The pool named a failed explorer's error by the last line of Ray's text: a message of two lines
    lost its first line and its type ('last error: see its log'), and a CanterError raised in the
    explorer read 'canter.errors.CanterError: ...'. Now the exception the call raised (``.cause``)."""
    def raised(cause: Exception) -> Exception:  # what ray.get raises for a call that raised ``cause``
        trace = f"Traceback (most recent call last):\n  File \"env.py\", line 3, in step\n{type(cause).__name__}"
        return exceptions.RayTaskError("rollout", trace, cause, proctitle="ray::ExplorerActor.rollout", pid=7,
                                       ip="127.0.0.1").as_instanceof_cause()

    assert failure_reason(raised(RuntimeError("simulator crashed\nsee its log"))) == "RuntimeError: simulator crashed"
    assert failure_reason(raised(CanterError("unknown env id 'Foo-v0'"))) == "unknown env id 'Foo-v0'"
    assert failure_reason(raised(KeyError())) == "KeyError"
    died = exceptions.RayActorError(error_msg="The actor died unexpectedly before finishing this task.\n\tpid: 7\n"
                                              "The actor is dead because its worker process has died.")
    assert failure_reason(died) == "The actor is dead because its worker process has died"


class _Ref:
    def __init__(self, value):
        self.value = value


def _standin_ray(killed: list) -> SimpleNamespace:
    """Enough of Ray for the pool: ``get`` raises what a call raised, as Ray does (RayTaskError)."""
    def get(ref, timeout=None):  # (the pool passes a start limit)
        if isinstance(ref.value, Exception):
            raise exceptions.RayTaskError("call", "Traceback", ref.value, proctitle="ray::ExplorerActor", pid=7,
                                          ip="127.0.0.1").as_instanceof_cause()
        return ref.value

    def remote(cls):
        def options(**kw):
            return SimpleNamespace(remote=lambda slot, count, run, cfg, generation, spaces: _Actor(slot))
        return SimpleNamespace(options=options)

    return SimpleNamespace(exceptions=exceptions, get=get, remote=remote, cluster_resources=lambda: {"CPU": 2.0},
                           kill=lambda actor, no_restart: killed.append(actor.slot))


class _Actor:
    """Explorer 1 could not be built (its env cannot be made), or cannot reset its envs."""

    def __init__(self, slot):
        self.slot = slot
        self.pid = SimpleNamespace(remote=lambda: _Ref(ValueError("cannot open the simulator") if slot == 1 else 100))
        self.reset = SimpleNamespace(remote=lambda seed: _Ref(OSError("the saved level is gone") if slot else None))


def test_a_pool_whose_explorer_cannot_start_raises_one_line_and_gives_its_explorers_back(monkeypatch):
    """An explorer whose constructor raised was found only at the first rollout (4 replacements later, after
    the run directory was written). The pool now waits for its explorers, names the first that could not
    start, and kills those it made (a connection it did not open outlives them) before it disconnects."""
    from canter.config import resolve_config
    from canter.distributed import pool as pool_module
    from canter.errors import ExplorerError

    killed, disconnected = [], []
    monkeypatch.setattr(pool_module, "connect", lambda address: (_standin_ray(killed), False))
    monkeypatch.setattr(pool_module, "disconnect", lambda ray, owns: disconnected.append(owns))
    run, cfg = resolve_config("ppo", "CartPole-v1", n_envs=2)
    with pytest.raises(ExplorerError, match=r"^explorer 1 could not start: ValueError: cannot open the simulator$"):
        pool_module.RayPool(run, cfg, 3)
    assert killed == [0, 1, 2] and disconnected == [False]


def test_a_resumed_pool_whose_explorer_cannot_reset_raises_one_line():
    """A resumed run's explorers start fresh episodes (``reset``); one whose env raised there surfaced as
    Ray's RayTaskError with the remote traceback (CLI exit code 1). Now one line naming it."""
    from canter.config import resolve_config
    from canter.distributed import pool as pool_module
    from canter.errors import ExplorerError

    run, _ = resolve_config("ppo", "CartPole-v1", n_envs=2)
    pool = object.__new__(pool_module.RayPool)  # the pool's bookkeeping only
    pool.ray, pool.run, pool.actors = _standin_ray([]), run, [_Actor(0), _Actor(1)]
    with pytest.raises(ExplorerError, match=r"^explorer 1 could not start fresh episodes: OSError: the saved level"):
        pool.reset(run.seed + 1)


def test_more_explorers_than_ray_can_share_the_cpus_among_is_refused_with_one_line(monkeypatch):
    """Explorers share the cluster's CPUs when there are more of them than CPUs, but Ray refuses a share
    below 0.0001 CPU: ``--explorers 30000`` on 2 CPUs ended in Ray's ValueError and a traceback (exit
    code 1) after starting Ray. Now one line naming the most the cluster can hold."""
    from canter.config import resolve_config
    from canter.distributed import pool as pool_module
    from canter.errors import CanterError

    disconnected = []
    monkeypatch.setattr(pool_module, "connect", lambda address: (_standin_ray([]), True))
    monkeypatch.setattr(pool_module, "disconnect", lambda ray, owns: disconnected.append(owns))
    run, cfg = resolve_config("ppo", "CartPole-v1", n_envs=1)
    with pytest.raises(CanterError, match=r"^30,000 explorers are too many for the 2 CPUs of this Ray cluster: each "
                                          r"needs at least 0.0001 CPU \(Ray's smallest share\), so at most 20,000 explorers$"):
        pool_module.RayPool(run, cfg, 30_000)
    assert disconnected == [True]


def test_more_explorers_than_the_clusters_memory_holds_are_refused_with_one_line(monkeypatch):
    """--explorers 5000 on a small machine was taken: Ray started 5000 actors of ~0.2 GiB each and waited."""
    from canter.config import resolve_config
    from canter.distributed import pool as pool_module
    from canter.errors import CanterError

    disconnected = []
    ray = _standin_ray([])
    ray.cluster_resources = lambda: {"CPU": 2.0, "memory": 16 * 2**30}
    monkeypatch.setattr(pool_module, "connect", lambda address: (ray, True))
    monkeypatch.setattr(pool_module, "disconnect", lambda ray, owns: disconnected.append(owns))
    run, cfg = resolve_config("ppo", "CartPole-v1", n_envs=1)
    with pytest.raises(CanterError, match=r"^5,000 explorers need about 1,000 GiB \(0.2 GiB each: a Python process "
                                          r"with torch and its envs\), more than the 16.0 GiB this Ray cluster gives "
                                          r"actors; at most 80 explorers$"):
        pool_module.RayPool(run, cfg, 5000)
    assert disconnected == [True]


def test_a_learner_that_cannot_be_made_gives_its_explorers_back(monkeypatch):
    """The explorer pool (Ray started, explorers built) is made before the learner; a learner that could
    not be made (here a callback object without hook methods) left Ray and its explorers running in the
    process, where the next run would have joined that instance and left it open. Now the pool is closed."""
    import canter
    from canter.distributed import pool as pool_module

    closed = []

    class StandinPool:  # what make_distributed_trainer builds instead of Ray explorers
        remote, count = True, 1

        def __init__(self, run, algo_cfg, count, address=None, **kw):
            pass

        def close(self):
            closed.append(True)

    monkeypatch.setattr(pool_module, "RayPool", StandinPool)
    with pytest.raises(CanterError, match="has none of the hook methods"):
        canter.make_trainer("ppo", "CartPole-v1", explorers=1, n_envs=2, callbacks=[object()])
    assert closed == [True]


def test_closing_a_ray_pool_twice_stops_its_explorers_once(monkeypatch):
    """A learner that fails in its constructor may close its env (the pool) itself before the pool is
    closed again; Ray refuses ``kill`` once it is shut down, which would hide the first error."""
    from canter.distributed import pool as pool_module

    killed, disconnected = [], []
    monkeypatch.setattr(pool_module, "disconnect", lambda ray, owns: disconnected.append(owns))
    pool = object.__new__(pool_module.RayPool)  # the pool's bookkeeping only
    pool.ray = SimpleNamespace(kill=lambda actor, no_restart: killed.append(actor))
    pool.actors, pool.in_flight, pool._owns_connection, pool._retiring = ["a", "b"], {}, True, []
    pool.close()
    pool.close()
    assert killed == ["a", "b"] and disconnected == [True, True]


def test_an_explorer_whose_env_has_other_spaces_than_the_learners_cannot_start():
    """An env that has other spaces in an explorer's process (another version of it on a node, a setting
    read there) failed every rollout with 'RuntimeError: Error(s) in loading state_dict for ActorCritic:'
    (4 replacements, then that line). The explorer now compares its env's spaces with the learner's when
    it is built, and its first call raises the difference (in-process: no Ray needed)."""
    import gymnasium as gym
    import numpy as np

    from canter.config import resolve_config
    from canter.distributed.explorer import ExplorerActor

    run, cfg = resolve_config("ppo", "CartPole-v1", n_envs=1)
    wide = gym.spaces.Box(-np.inf, np.inf, (5,), np.float32)
    actor = ExplorerActor(0, 1, run, cfg, spaces=(wide, gym.spaces.Discrete(2)))
    with pytest.raises(CanterError, match=r"^its env does not match the learner's: trained on Box\(shape=\(5,\), "
                                          r"float32\) -> Discrete\(2\), env has Box\(shape=\(4,\), float32\)"):
        actor.pid()
    env = gym.make("CartPole-v1")
    actor = ExplorerActor(0, 1, run, cfg, spaces=(env.observation_space, env.action_space))
    try:
        assert actor.rollout(None, 1, 4)["obs"].shape == (4, 1, 4)
    finally:
        actor.explorer.close()
        env.close()


#: what ray.get raised (Ray 2.60) for a call to an explorer actor whose process was killed (SIGKILL)
KILLED = ("The actor died unexpectedly before finishing this task.\n\tclass_name: ExplorerActor\n\tactor_id: 5b1a46\n"
          "\tpid: 28119\n\tnamespace: 99b74fd1\n\tip: 127.0.0.1\nThe actor is dead because its worker process has "
          "died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error "
          "code 2. End of file. Some common causes include: (1) the process was killed by the OOM killer due to high "
          "memory usage, (2) ray stop --force was called, or (3) the worker crashed unexpectedly due to SIGSEGV or "
          "another unexpected error. If the process was killed by the kernel OOM killer (verifiable by checking for "
          "OOM in dmesg of the OOMing node), consider enabling resource isolation via --enable-resource-isolation to "
          "prevent node deaths by resource contention and significant loss of progress by uninformed kernel OOM "
          "killing.")


def test_a_killed_explorers_warning_is_one_short_line(caplog):
    """The warning repeated Ray's whole last line: exit details and advice for Ray's own command line
    ('consider enabling resource isolation via --enable-resource-isolation'). Now the explorer, the cause (the
    first sentence) and that canter replaces it."""
    from canter.distributed.pool import RayPool

    def get(ref):
        raise exceptions.RayActorError(error_msg=KILLED)

    pool = object.__new__(RayPool)  # the pool's bookkeeping only: no actors, no Ray
    pool.ray = SimpleNamespace(exceptions=exceptions, get=get, kill=lambda *a, **k: None)
    pool.count, pool.actors, pool.generation, pool.failures, pool.pids, pool.restarts = 1, ["old"], [0], [0], [None], 0
    pool._built_at, pool._answered, pool._slowest, pool._retiring = [0.0], [0.0], 0.0, []
    pool._slot_version, pool._starting, pool._fresh = [1], {}, set()
    pool._spawn = lambda slot: SimpleNamespace(pid=SimpleNamespace(remote=lambda: "up"))  # the replacement
    pool.in_flight = {"lost": (0, 0, None)}
    with caplog.at_level("WARNING", logger="canter.distributed"):
        assert pool._receive("lost") == (0, None)
    assert [r.getMessage() for r in caplog.records] == [
        "explorer 0 failed: The actor is dead because its worker process has died; starting a replacement"]
    assert pool.restarts == 1
