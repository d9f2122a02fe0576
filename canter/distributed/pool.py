"""Explorer pools: where rollouts come from. :class:`RayPool` runs explorers as Ray actors,
:class:`LocalPool` runs one explorer in the learner's process (no Ray).

Both offer the same calls: ``publish(weights, version)`` (Ray: one ``ray.put``, every explorer
reads the same reference), ``submit(slot, **kw)`` (queue a rollout carrying the latest weights
reference and version, so a replacement explorer needs no separate sync), ``wait() -> (slot,
result)`` (the next finished rollout) and ``gather(**kw)`` (one rollout from every explorer).
After each result the pool exposes the finished episodes as ``finished_returns`` /
``finished_lengths`` / ``finished_envs`` / ``finished_success``, like a
:class:`~canter.envs.vector.VecEnv`, so the trainer's episode bookkeeping is unchanged.
"""
from __future__ import annotations

import dataclasses
import logging
import re
import time
from typing import Any

import numpy as np

from canter.distributed.cluster import connect, disconnect, sigterm_code
from canter.distributed.explorer import Explorer, ExplorerActor, nbytes
from canter.errors import CanterError, ExplorerError

log = logging.getLogger("canter.distributed")

#: Ray restarts a dead explorer actor this many times, re-running its lost calls: never. A restarted
#: actor re-ran its constructor with the run's start seeds (replaying its first episodes) and its lost
#: calls with the weights they were first given (150 versions old after a restart of a few seconds). The
#: pool replaces a dead explorer itself, as one whose rollout raised: a fresh seed block, and the lost
#: calls resubmitted with the latest weights once the replacement is up
MAX_RESTARTS = 0
#: an explorer slot that fails this many times in a row stops the run: failures of explorers that had not
#: run STEADY_SECONDS yet count in a row even when results came between them (an env that raises at its
#: 50th step, with 32 steps a rollout, alternated results and failures: replaced forever, never stopped)
MAX_CONSECUTIVE_FAILURES = 4
#: an explorer that returns a rollout after running this long (since it was built) clears its slot's failures
STEADY_SECONDS = 60.0
#: ``explorer_timeout: null`` (automatic): a rollout may take this many times the slowest the run has had so far...
AUTO_TIMEOUT_FACTOR = 10.0
#: ... and at least this long; a new explorer (a replacement) always gets at least this long to start (a Python
#: process importing torch and building its envs: ~1.3 s measured on an idle machine, much more on a loaded node)
MIN_TIMEOUT_SECONDS = 60.0
#: ``explorer_timeout: null`` before any rollout of the run has returned (no rollout time to scale yet)
FIRST_ROLLOUT_TIMEOUT_SECONDS = 600.0
#: at the end of a run, wait at most this long for rollouts still in flight before stopping explorers; a replaced
#: explorer is killed this long after it was asked to close its env at the latest (the learner does not wait for it)
CLOSE_WAIT_SECONDS = 5.0
#: Ray's smallest share of a resource: an actor cannot ask for less of a CPU
MIN_CPU_SHARE = 1e-4
#: memory of one explorer actor: a Python process with torch, gymnasium and its envs (~0.19 GiB measured for
#: CartPole PPO explorers on the development machine; envs with more state take more)
EXPLORER_GIB = 0.2


def failure_reason(exc: BaseException) -> str:
    """What went wrong in an explorer, in one line, from the error Ray raised for the call.

    A call that raised (``RayTaskError``; also a constructor's exception, which
    :class:`~canter.distributed.explorer.ExplorerActor` raises from every call) gives its cause
    itself: a :class:`CanterError`'s message, else ``Type: first line of the message``. An actor
    that died (``RayActorError``: killed, its node lost) or any other Ray error gives the first sentence
    of the last line of Ray's message (its text ends with what happened: "The actor is dead because its
    worker process has died", without the paragraph that follows it, of exit details and advice for Ray's
    own command line), else the error's type.
    """
    cause = None
    try:
        from ray.exceptions import RayError, RayTaskError
    except ImportError:  # a stand-in for Ray (tests): the message's last line
        pass
    else:
        if isinstance(exc, RayTaskError) and not isinstance(exc.cause, RayError):  # (an unpicklable cause: text)
            cause = exc.cause
    if isinstance(cause, BaseException):
        first = (str(cause).strip().splitlines() or [""])[0]
        if isinstance(cause, CanterError) and first:
            return first
        return f"{type(cause).__name__}: {first}" if first else type(cause).__name__
    last = (str(exc).strip().splitlines() or [type(exc).__name__])[-1].strip()
    return re.split(r"(?<=[.!?])\s", last, maxsplit=1)[0].rstrip(".") or type(exc).__name__


class _Episodes:
    """VecEnv-style view of the episodes in the latest result(s)."""

    finished_returns: np.ndarray = np.zeros(0)
    finished_lengths: np.ndarray = np.zeros(0, np.int64)
    finished_envs: np.ndarray = np.zeros(0, np.int64)
    finished_success: np.ndarray = np.zeros(0)
    envs_per_explorer: int = 1
    #: names for each sub-env of every explorer (index as in ``finished_envs``) that ``history.parquet``
    #: records with its episodes: a multi-agent env's ``agent``, as
    #: :attr:`VecEnv.row_labels <canter.envs.VecEnv.row_labels>`
    row_labels: dict[str, np.ndarray] = {}

    def _set_episodes(self, results: list[dict[str, Any]]) -> None:
        self.finished_returns = np.concatenate([r["episode_returns"] for r in results])
        self.finished_lengths = np.concatenate([r["episode_lengths"] for r in results])
        if all("episode_envs" in r for r in results):  # each episode's sub-env, numbered across the explorers
            self.finished_envs = np.concatenate([r["episode_envs"] + r["index"] * self.envs_per_explorer
                                                 for r in results]).astype(np.int64)
        else:  # a result from an older explorer
            self.finished_envs = np.arange(len(self.finished_returns))
            self.row_labels = {}
        self.finished_success = np.concatenate([  # NaN: not reported (or a result from an older explorer)
            r.get("episode_successes", np.full(len(r["episode_returns"]), np.nan)) for r in results])


class LocalPool(_Episodes):
    """One explorer in this process, acting with the learner's own Agent (always current weights)."""

    remote = False

    def __init__(self, explorer: Explorer) -> None:
        self.explorer = explorer
        self.count = 1
        self.num_envs = explorer.env.num_envs
        self.envs_per_explorer = self.num_envs
        self.row_labels = dict(getattr(explorer.env, "row_labels", None) or {})
        self.version = 0
        self.restarts = 0
        self.weights_bytes = 0
        self._queue: list[dict[str, Any]] = []  # the queued rollouts' settings (saved with a resume)

    def reset(self, seed: int | None = None) -> None:
        """Explorers reset their envs when they are built; a different ``seed`` (a resumed run's
        fresh episodes) resets them again."""
        if seed is not None:
            self.explorer.reset(seed)

    def publish(self, weights: Any, version: int) -> None:
        """The explorer shares the learner's networks; only the version is recorded."""
        self.version = version

    def submit(self, slot: int, **kw: Any) -> None:
        """Queue a rollout; it runs when :meth:`wait` is called."""
        self._queue.append(kw)

    def wait(self) -> tuple[int, dict[str, Any]]:
        """Run the oldest queued rollout now."""
        result = self.explorer.rollout(None, self.version, **self._queue.pop(0))
        self._set_episodes([result])
        return 0, result

    def gather(self, **kw: Any) -> list[dict[str, Any]]:
        """One rollout."""
        self.submit(0, **kw)
        return [self.wait()[1]]

    def close(self) -> None:
        """Close the explorer's env."""
        self.explorer.close()


class RayPool(_Episodes):
    """``count`` explorer actors on a Ray cluster (local, or joined with ``address``); one that dies or
    fails is replaced by a new actor (``restarts`` counts the replacements), never restarted by Ray."""

    #: why a resumed run starts fresh episodes (see canter.envs.state.capture_env)
    resume_problem = "the envs live in the Ray explorer actors"

    remote = True

    def __init__(self, run: Any, algo_cfg: Any, count: int, address: str | None = None, rows_per_copy: int = 1,
                 copy_labels: dict[str, np.ndarray] | None = None, spaces: tuple[Any, Any] | None = None) -> None:
        """``rows_per_copy``: sub-envs per env copy (a multi-agent env's agents; 1 otherwise), so each
        explorer's vector env has ``run.n_envs * rows_per_copy`` of them; ``copy_labels``: the row
        labels of one copy (a multi-agent env's agent names), repeated for every copy; ``spaces``: the
        learner's (observation, action) spaces, which each explorer's env must have."""
        self.ray, self._owns_connection = connect(address)
        ray = self.ray
        started: list[Any] = []  # each explorer's first call: answered once its constructor has returned (or raised)
        try:
            total_cpus = float(ray.cluster_resources().get("CPU", count))
            # never ask for more CPUs than the cluster has: actors would wait forever
            self.cpus = min(1.0, total_cpus / count)
            if self.cpus and int(self.cpus * (1 / MIN_CPU_SHARE)) == 0:  # Ray's own test: a share it would refuse
                raise CanterError(f"{count:,} explorers are too many for the {total_cpus:g} CPUs of this Ray cluster: "
                                  f"each needs at least {MIN_CPU_SHARE:g} CPU (Ray's smallest share), so at most "
                                  f"{int(total_cpus / MIN_CPU_SHARE):,} explorers")
            memory = float(ray.cluster_resources().get("memory", 0.0)) / 2**30  # what Ray gives actors, GiB
            if memory and count * EXPLORER_GIB > memory:  # they would fill memory long before all had started
                raise CanterError(f"{count:,} explorers need about {count * EXPLORER_GIB:,.0f} GiB ({EXPLORER_GIB:g} GiB "
                                  f"each: a Python process with torch and its envs), more than the {memory:,.1f} GiB "
                                  f"this Ray cluster gives actors; at most {int(memory / EXPLORER_GIB):,} explorers")
            if self.cpus < 1.0:
                log.info("%d explorers on %g CPUs: %.2f CPU each", count, total_cpus, self.cpus)
            self.actor_cls = ray.remote(ExplorerActor).options(
                num_cpus=self.cpus, max_restarts=MAX_RESTARTS, max_task_retries=MAX_RESTARTS,
            )
            self.run, self.algo_cfg, self.count, self.spaces = run, algo_cfg, count, spaces
            self._slowest = 0.0  # the slowest rollout so far (explorer_timeout: null)
            self.envs_per_explorer = run.n_envs * rows_per_copy
            self.num_envs = count * self.envs_per_explorer
            self.row_labels = {k: np.tile(np.asarray(v), count * run.n_envs) for k, v in (copy_labels or {}).items()}
            self.generation = [0] * count
            self.actors: list[Any] = []
            self.actors.extend(self._spawn(i) for i in range(count))
            # built in parallel; one whose constructor raised stops the run here, before anything is written
            started = [a.pid.remote() for a in self.actors]
            self.pids: list[int | None] = self._get_each(started, "could not start")
        except BaseException:
            try:  # the explorers built close their envs first, as close() asks (not one still being built: its
                # constructor may never return, and the close would wait behind it). At best effort: what failed
                # here is what the caller is told
                if started:
                    built = ray.wait(started, num_returns=len(started), timeout=0)[0]
                    self._close_envs([a for a, ref in zip(self.actors, started) if ref in built])
            except Exception as exc:  # noqa: BLE001 - the kills below must still run
                log.debug("could not ask the explorers built to close their envs: %s", exc)
            finally:
                try:
                    for actor in getattr(self, "actors", []):  # a connection this pool did not open outlives them
                        ray.kill(actor, no_restart=True)
                finally:
                    disconnect(self.ray, self._owns_connection)
            raise
        self.failures = [0] * count
        self._built_at = [time.monotonic()] * count  # when each slot's explorer was started (its failures)
        self.restarts = 0
        #: each call's slot, generation and settings (``None``: a replacement's readiness call)
        self.in_flight: dict[Any, tuple[int, int, dict[str, Any] | None]] = {}
        self._starting: dict[int, list[dict[str, Any]]] = {}  # replacements not yet up: their rollouts' settings
        self._fresh: set[int] = set()  # slots whose replacement has not yet returned a rollout
        #: since when each slot has been working without answering (explorer_timeout)
        self._answered = [time.monotonic()] * count
        self.weights_ref: Any = None
        self.version = 0
        self.weights_nbytes = 0
        self.weights_bytes = 0  # weights bytes sent to explorers (once per explorer and version)
        self._slot_version = [-1] * count
        #: replaced explorers asked to close their envs: (actor, its close call, when it is killed at the latest)
        self._retiring: list[tuple[Any, Any, float]] = []

    def _spawn(self, slot: int) -> Any:
        return self.actor_cls.remote(slot, self.count, self.run, self.algo_cfg, self.generation[slot], self.spaces)

    def reset(self, seed: int | None = None) -> None:
        """Explorers reset their envs (seeded from the run's seed) when they are built; a different
        ``seed`` (a resumed run's fresh episodes) resets each explorer's envs from its block of it, and
        replacements made after that take theirs from it too (from the run's seed, a resumed run's
        replacement replayed the episodes of the interrupted run's replacement of that slot)."""
        if seed is not None and seed != self.run.seed:
            self._get_each([actor.reset.remote(seed) for actor in self.actors], "could not start fresh episodes")
            self.run = dataclasses.replace(self.run, seed=seed)

    def publish(self, weights: dict[str, Any], version: int) -> None:
        """Put ``weights`` into the object store once; later submissions carry this reference."""
        self.weights_ref = self.ray.put(weights)
        self.weights_nbytes = nbytes(weights)
        self.version = version

    def submit(self, slot: int, **kw: Any) -> None:
        """Start a rollout on explorer ``slot`` with the latest weights (on a replacement still starting:
        once it is up, with the latest weights then, not those of now)."""
        if slot in self._starting:
            self._starting[slot].append(kw)
            return
        if not any(s == slot and g == self.generation[slot] for s, g, _ in self.in_flight.values()):
            self._answered[slot] = time.monotonic()  # an idle explorer's clock starts now, not while the learner learned
        if self._slot_version[slot] != self.version:
            self._slot_version[slot] = self.version
            self.weights_bytes += self.weights_nbytes
        ref = self.actors[slot].rollout.remote(self.weights_ref, self.version, **kw)
        self.in_flight[ref] = (slot, self.generation[slot], kw)

    def _receive(self, ref: Any) -> tuple[int, dict[str, Any] | None]:
        """Fetch one finished call; on failure replace the explorer and resubmit the call (``None``: no
        rollout came)."""
        slot, generation, kw = self.in_flight.pop(ref)
        try:
            result = self.ray.get(ref)
        except self.ray.exceptions.RayError as exc:  # actor died, rollout raised, result lost
            if generation == self.generation[slot]:
                self._replace(slot, failure_reason(exc))
            if kw is not None:
                self.submit(slot, **kw)
            return slot, None
        if kw is None:  # a replacement is up: its rollouts start now, with the weights of now
            if generation == self.generation[slot]:
                self.pids[slot] = result
                self._answered[slot] = time.monotonic()
                for queued in self._starting.pop(slot, []):
                    self.submit(slot, **queued)
            return slot, None
        self._slowest = max(self._slowest, float(result.get("seconds", 0.0)))
        if generation == self.generation[slot]:  # a replaced explorer's late result: not the new one's process
            self._answered[slot] = time.monotonic()
            if time.monotonic() - self._built_at[slot] >= STEADY_SECONDS:  # (the failures count the current
                self.failures[slot] = 0  # explorer's; one that fails soon after its results is no recovery)
            if slot in self._fresh:  # a replacement's first rollout: its envs started new episodes
                self._fresh.discard(slot)
                result["fresh_episodes"] = True
            self.pids[slot] = result["pid"]  # (Ray restarts no explorer: MAX_RESTARTS; replacements count in _replace)
        for k, v in result.items():  # own the arrays (object-store views are read-only)
            if isinstance(v, np.ndarray) and not v.flags.writeable:
                result[k] = v.copy()
        return slot, result

    def _get_each(self, refs: list[Any], failed: str) -> list[Any]:
        """The results of one call per explorer, in explorer order; the first call that failed raises
        :class:`ExplorerError` ``explorer <slot> <failed>: <what it raised>`` (:func:`failure_reason`), and so
        does one still unanswered after the limit of a start (an env whose constructor never returns)."""
        limit = self._start_limit()
        deadline = None if limit is None else time.monotonic() + limit  # (the calls run in parallel)
        results = []
        for slot, ref in enumerate(refs):
            try:
                with sigterm_code():
                    results.append(self.ray.get(ref, timeout=None if deadline is None
                                                else max(deadline - time.monotonic(), 0.0)))
            except self.ray.exceptions.GetTimeoutError:
                raise ExplorerError(f"explorer {slot} {failed}: {self._timeout_reason('no answer', limit)}") from None
            except self.ray.exceptions.RayError as exc:
                raise ExplorerError(f"explorer {slot} {failed}: {failure_reason(exc)}") from None
        return results

    def _replace(self, slot: int, reason: str, hung: bool = False) -> None:
        """Count a failure of explorer ``slot`` (``reason``: what went wrong, one line) and start a replacement;
        the slot's last failure in a row (MAX_CONSECUTIVE_FAILURES) raises :class:`ExplorerError` instead. The
        failed explorer is asked to close its env (one whose rollout raised is alive, and its env may hold a file or
        a simulator) and killed later, without waiting (:meth:`_reap`); one ``hung`` in a call (explorer_timeout),
        whose close would only wait behind it, or that cannot be asked, is killed now."""
        self.failures[slot] += 1
        if self.failures[slot] >= MAX_CONSECUTIVE_FAILURES:
            raise ExplorerError(f"explorer {slot} failed {self.failures[slot]} times in a row; last error: {reason}")
        log.warning("explorer %d failed: %s; starting a replacement", slot, reason)
        try:  # its close queues behind its rollouts still running (IMPALA keeps two): the learner must not wait
            if hung:
                raise RuntimeError("hung in a call")
            self._retiring.append((self.actors[slot], self.actors[slot].close.remote(),
                                   time.monotonic() + CLOSE_WAIT_SECONDS))
        except Exception as exc:  # noqa: BLE001 - the kill and the replacement must still come
            log.debug("explorer %d is not asked to close its env: %s", slot, exc)
            self.ray.kill(self.actors[slot], no_restart=True)
        self.generation[slot] += 1
        self.restarts += 1
        self.pids[slot] = None
        self._slot_version[slot] = -1
        self._fresh.add(slot)
        self._built_at[slot] = self._answered[slot] = time.monotonic()
        self.actors[slot] = self._spawn(slot)
        # its rollouts wait until it is built (seconds): sent now, they would carry the weights of now
        self._starting.setdefault(slot, [])
        self.in_flight[self.actors[slot].pid.remote()] = (slot, self.generation[slot], None)

    def _reap(self) -> float | None:
        """Kill the replaced explorers whose close has returned (or failed: a dead actor) or that were asked
        ``CLOSE_WAIT_SECONDS`` ago; returns the seconds until the next one's limit (None: none left)."""
        if not self._retiring:
            return None
        closing = [ref for _, ref, _ in self._retiring]
        closed, now, left = set(self.ray.wait(closing, num_returns=len(closing), timeout=0)[0]), time.monotonic(), []
        for actor, ref, deadline in self._retiring:
            if ref in closed or deadline <= now:
                self.ray.kill(actor, no_restart=True)
            else:
                left.append((actor, ref, deadline))
        self._retiring = left
        return min((max(deadline - now, 0.0) for _, _, deadline in left), default=None)

    def time_limit(self, slot: int) -> float | None:
        """Seconds explorer ``slot`` may work without answering (``run.explorer_timeout``; None: no limit):
        a rollout, or a new explorer's start (at least MIN_TIMEOUT_SECONDS)."""
        limit = self.run.explorer_timeout
        if limit is None and self._slowest:  # automatic: a generous multiple of the rollout times seen
            return max(AUTO_TIMEOUT_FACTOR * self._slowest, MIN_TIMEOUT_SECONDS)
        return self._start_limit() if limit is None or slot in self._starting else limit or None

    def _start_limit(self) -> float | None:
        """Seconds a new explorer may take to start (and any explorer before the run's first rollout, while
        ``explorer_timeout`` is null): ``explorer_timeout``, at least MIN_TIMEOUT_SECONDS; None for 0."""
        limit = self.run.explorer_timeout
        return None if limit == 0 else max(limit or FIRST_ROLLOUT_TIMEOUT_SECONDS, MIN_TIMEOUT_SECONDS)

    def _timeout_reason(self, what: str, limit: float) -> str:
        """``<what> within <limit> s (explorer_timeout: <how the limit was set>)``, one line."""
        setting = self.run.explorer_timeout
        if setting is not None:
            how = f"{setting:g}" + (f", and at least {MIN_TIMEOUT_SECONDS:g} s to start" if limit != setting else "")
        elif self._slowest:
            how = f"null, {AUTO_TIMEOUT_FACTOR:g}x the slowest rollout so far, at least {MIN_TIMEOUT_SECONDS:g} s"
        else:
            how = "null, before the run's first rollout"
        return f"{what} within {limit:g} s (explorer_timeout: {how})"

    def _expire(self, done: set[Any]) -> float | None:
        """Replace the explorers that have worked longer than their :meth:`time_limit` without answering (none of
        their calls in ``done``): killed, counted as failed, their calls sent again to the replacement. Returns
        the seconds until the next explorer's limit (None: no limit to wait for)."""
        now, wait = time.monotonic(), None
        working: dict[int, list[Any]] = {}  # each explorer's calls (one pass: hundreds of explorers)
        for ref, (slot, generation, _) in self.in_flight.items():
            if generation == self.generation[slot]:
                working.setdefault(slot, []).append(ref)
        for slot, calls in working.items():
            limit = self.time_limit(slot)
            if limit is None or any(ref in done for ref in calls):
                continue
            if self._answered[slot] + limit <= now:
                lost = [self.in_flight.pop(ref)[2] for ref in calls]  # (the killed actor's calls are never fetched)
                self._replace(slot, self._timeout_reason("not started" if slot in self._starting else "no rollout",
                                                         limit), hung=True)
                for kw in lost:
                    if kw is not None:  # (a timed-out start's readiness call: the replacement makes its own)
                        self.submit(slot, **kw)
                limit = self.time_limit(slot) or limit  # the replacement's start
            left = max(self._answered[slot] + limit - now, 0.0)
            wait = left if wait is None else min(wait, left)
        return wait

    def _next_ready(self) -> Any:
        """The earliest submitted of the finished calls, replacing meanwhile the explorers that exceed their
        :meth:`time_limit` (an env whose step never returns) and killing the replaced explorers done closing
        (:meth:`_reap`). ``ray.wait(num_returns=1)`` returns any one of
        those finished, not the first in its list: an explorer's rollouts reached the learner out of
        order (a tenth of IMPALA's, measured), one waited there for seconds (lag 86) and an explorer whose
        results were passed over got no new work (Ape-X: 6 rollouts from one explorer, 34 from the other)."""
        while True:
            refs = list(self.in_flight)
            done = set(self.ray.wait(refs, num_returns=len(refs), timeout=0)[0])  # all those finished by now
            wait, reap = self._expire(done), self._reap()
            if done:
                return next(ref for ref in refs if ref in done)
            wait = reap if wait is None else wait if reap is None else min(wait, reap)
            with sigterm_code():  # until one finishes (a replaced explorer's close too), or the next limit
                self.ray.wait([*self.in_flight, *(ref for _, ref, _ in self._retiring)], num_returns=1, timeout=wait)

    def wait(self) -> tuple[int, dict[str, Any]]:
        """The next finished rollout, the earliest submitted first (failed calls are retried on a
        replacement explorer)."""
        while True:
            slot, result = self._receive(self._next_ready())
            if result is not None:
                self._set_episodes([result])
                return slot, result

    def gather(self, **kw: Any) -> list[dict[str, Any]]:
        """One rollout from every explorer with the latest weights, in explorer order."""
        for slot in range(self.count):
            self.submit(slot, **kw)
        results: dict[int, dict[str, Any]] = {}
        while self.in_flight:
            slot, result = self._receive(self._next_ready())
            if result is not None:
                results[slot] = result
        ordered = [results[i] for i in range(self.count)]
        self._set_episodes(ordered)
        return ordered

    def pids_now(self) -> list[int]:
        """Process ids of the live explorers (asks each actor)."""
        return self._get_each([a.pid.remote() for a in self.actors], "did not answer")

    def _close_envs(self, actors: list[Any] | None = None, asked: list[Any] | None = None) -> None:
        """Ask every explorer (or those of ``actors``) to close its env (an env whose close writes a file or frees a
        resource: ``ray.kill`` runs no Python), waiting up to ``CLOSE_WAIT_SECONDS`` for them all and for the close
        calls ``asked`` already. At best effort: an actor that is dead or cannot be asked is killed all the same."""
        closing = list(asked or [])
        try:
            closing += [actor.close.remote() for actor in (self.actors if actors is None else actors)]
        except Exception as exc:  # noqa: BLE001 - the kills below must still run
            log.debug("could not ask the explorers to close their envs: %s", exc)
        if closing:
            with sigterm_code():
                self.ray.wait(closing, num_returns=len(closing), timeout=CLOSE_WAIT_SECONDS)

    def close(self) -> None:
        """Stop the explorers: each is asked to close its env (waiting up to ``CLOSE_WAIT_SECONDS`` for them all and
        for the replaced explorers still closing), then killed, the replaced ones too; disconnect from (or stop) Ray
        if this pool connected. A second call does nothing more (Ray refuses ``kill`` once it is shut down)."""
        retiring, self._retiring = self._retiring, []
        try:
            if self.in_flight:  # let running rollouts finish (briefly) so no call dies mid-flight
                with sigterm_code():
                    self.ray.wait(list(self.in_flight), num_returns=len(self.in_flight), timeout=CLOSE_WAIT_SECONDS)
            self._close_envs(asked=[ref for _, ref, _ in retiring])
        finally:
            try:
                for actor in [*self.actors, *(actor for actor, _, _ in retiring)]:
                    self.ray.kill(actor, no_restart=True)
            finally:
                self.in_flight.clear()
                self.actors = []
                disconnect(self.ray, self._owns_connection)
