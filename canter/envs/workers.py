"""Async vectorisation (``vectorization: async``): an env's failure in a worker as one line, Ctrl-C left to the parent.

Gymnasium's ``AsyncVectorEnv`` runs each env copy in a worker process. When a copy raises there,
gymnasium logs the worker's traceback through ``gymnasium.logger`` (warnings on stderr) and raises
``type(exc)(exc)`` again in the parent, whose traceback shows only gymnasium's frames; a constructor
that fails in a worker prints the worker's traceback and kills it; a worker that dies leaves the parent
an ``EOFError``, and the vector env cannot be closed after it (every close raises that again). And a
terminal's Ctrl-C reaches every process of the group, as does a SIGTERM sent to the group (``timeout``, a
job scheduler, ``kill -TERM -PGID``): the workers died of it while the parent's :class:`~canter.run.Run`
was finishing the iteration to save the run.

:func:`vector_env` builds every vector env canter makes from env copies. Its async one makes each copy
through :class:`WorkerEnvFn` (in a worker: Ctrl-C and SIGTERM ignored, the env's errors made one :class:`AsyncEnvError`
line that names the error and where in the env's code it was raised), behind :class:`AsyncErrors`, which
keeps ``gymnasium.logger`` quiet while the workers are called (its public ``min_level``), names the env in
the error, says which worker died and how, and closes the workers after either. As the workers ignore
SIGTERM, which is how ``Process.terminate`` stops them, the workers of an unanswered call are killed
(SIGKILL), and the async envs still open when the interpreter exits are closed first (multiprocessing's
own exit hook terminates its daemon processes and would then wait for them forever); an async env collected unclosed
kills its workers (:class:`_AsyncVectorEnv`: gymnasium's ``__del__`` terminated and waited for them). A worker whose parent
stops listening (its pipe closed: the parent died of a SIGTERM it did not take) ends without a word (:func:`_worker`).
"""
from __future__ import annotations

import atexit
import gc
import multiprocessing
import os
import signal
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import gymnasium as gym
import numpy as np

from canter.errors import CanterError, _library_file, raised_by_the_call, raised_in

_NEXT_STEP = gym.vector.AutoresetMode.NEXT_STEP
_SILENT = gym.logger.ERROR + 1  # a gymnasium.logger.min_level above every level it logs at


class AsyncEnvError(CanterError):
    """An env copy failed in an async worker process (its constructor, ``reset`` or ``step`` raised, or
    the process died). One argument, the message: gymnasium raises ``type(exc)(exc)`` again in the parent."""


def vector_env(make: Callable[[], gym.Env], n_envs: int, asynchronous: bool, env_id: str) -> gym.vector.VectorEnv:
    """``n_envs`` copies of the env that ``make`` builds, in a ``SyncVectorEnv`` or (``asynchronous``) in
    ``AsyncVectorEnv`` workers behind :class:`AsyncErrors`, whose errors name ``env_id``; ``NEXT_STEP`` autoreset."""
    if not asynchronous:
        return gym.vector.SyncVectorEnv([make] * n_envs, autoreset_mode=_NEXT_STEP)
    fn = WorkerEnvFn(make, env_id)  # one for all copies: each worker's copy knows the spaces the parent's env had
    before = set(multiprocessing.active_children())
    # the parent's unreachable cycles are collected here, before the workers fork: a forked copy of them was
    # finalized by a worker's garbage collection, where native objects (an ale-py env and its threads left by an
    # earlier run in the process) do not survive a fork (a worker segfaulted in the full test suite)
    gc.collect()
    try:
        env = _AsyncVectorEnv([fn] * n_envs, autoreset_mode=_NEXT_STEP, worker=_worker)
    except KeyboardInterrupt:  # a Ctrl-C while the workers start: gymnasium's __del__ would wait for their envs
        _kill_new_workers(before)
        raise
    except (EOFError, ConnectionError):  # a worker died before it could answer (os._exit in the constructor)
        raise AsyncEnvError(f"env '{env_id}': an async worker process died while making the env") from None
    except TypeError as exc:  # a Graph or Sequence space: no shared memory of a fixed shape for it
        if fn.spaces is None or "dynamic shape" not in str(exc):
            raise
        raise _dynamic_space_error(env_id, fn.spaces) from None
    wrapped = AsyncErrors(env, env_id)
    _OPEN.add(wrapped)
    # (again) after multiprocessing's exit hook, which the workers' start registered: atexit runs hooks last first
    atexit.unregister(_close_open_envs)
    atexit.register(_close_open_envs)
    return wrapped


class _AsyncVectorEnv(gym.vector.AsyncVectorEnv):
    """Gymnasium's ``AsyncVectorEnv`` whose ``__del__`` (an env dropped without ``close()``: a trainer left to the
    garbage collector) ends its workers: gymnasium's terminates them with SIGTERM, which they ignore, and joined them,
    forever where another async env's later-forked workers held their pipes open (a trainer's evaluation env)."""

    def __del__(self) -> None:
        if not getattr(self, "closed", True) and hasattr(self, "_state"):
            for process in getattr(self, "processes", ()):
                if process.is_alive():
                    process.kill()
        super().__del__()


def _kill_new_workers(before: set[Any]) -> None:
    """Kill the async workers started since ``before`` (the child processes then): a Ctrl-C while they started (their
    envs still being made) left them to gymnasium's ``__del__``, whose terminate (SIGTERM) they ignore and whose join
    waited until their envs were made, and a second Ctrl-C there was its traceback ('Exception ignored in ...')."""
    for process in multiprocessing.active_children():
        if process not in before and process.name.startswith("Worker<"):
            process.kill()


def _dynamic_space_error(env_id: str, spaces: tuple[gym.Space, gym.Space]) -> CanterError:
    """The one-line error for an env whose observation (or action) space has no fixed shape (``Graph``, ``Sequence``),
    which ``AsyncVectorEnv`` refused with its advice to disable shared memory (no canter option), taken for a bad
    env_kwargs value; the sync copies' error is the model's ("observation space Graph is not supported")."""
    from canter.envs.spaces import describe_space

    def dynamic(space: gym.Space) -> bool:
        if isinstance(space, (gym.spaces.Graph, gym.spaces.Sequence)):
            return True
        inner = space.spaces.values() if isinstance(space, gym.spaces.Dict) else getattr(space, "spaces", ())
        return any(dynamic(s) for s in inner) if isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple)) else False

    kind = "action" if dynamic(spaces[1]) and not dynamic(spaces[0]) else "observation"
    space = spaces[1] if kind == "action" else spaces[0]
    return CanterError(f"env '{env_id}': {kind} space {describe_space(space)} is not supported: its values have no "
                       f"fixed shape; canter takes Box, Discrete, MultiDiscrete and MultiBinary spaces, and Dict or "
                       f"Tuple spaces of them")


#: the async envs not closed yet (:func:`_close_open_envs` closes them at the interpreter's exit)
_OPEN: weakref.WeakSet[AsyncErrors] = weakref.WeakSet()


def _close_open_envs() -> None:
    """Close the async envs still open: their workers ignore the SIGTERM of multiprocessing's exit hook. A Ctrl-C while
    they close (a copy's close() can take a while) kills the workers of that env and of those not closed yet: it
    stopped this loop, printed a traceback ('Exception ignored in atexit callback') and left them alive, and
    multiprocessing's exit hook then waited for them forever. Another error is raised once all are closed."""
    envs = list(_OPEN)
    error: Exception | None = None
    for i, env in enumerate(envs):
        for _ in range(3):  # a close that raised marked the env broken: the next kills its workers
            try:
                env.close()
                break
            except KeyboardInterrupt:  # the process is exiting, as the Ctrl-C asks
                for other in envs[i:]:
                    other.broken = True
            except Exception as exc:  # noqa: BLE001 - raised below, once the other envs' workers are ended
                error = error or exc
    if error is not None:
        raise error


def _worker(*args: Any) -> None:
    """Gymnasium's async worker (``_async_worker``, called with the arguments it is given), ending without a word when
    the parent process stops listening: its pipe closed (the parent died of a SIGTERM sent to the process group
    before the run took SIGTERM, or after; a close that kills the workers) made gymnasium's worker take the
    ``EOFError`` for the env's error, whose report to the parent failed in turn: two tracebacks per worker."""
    from gymnasium.vector.async_vector_env import _async_worker

    try:
        _async_worker(*args)
    except (EOFError, ConnectionError):  # the parent's end of the pipe is closed: nobody to answer
        pass


class WorkerEnvFn:
    """Makes an env copy with ``make``: in the process that built this object (the parent's copy that
    gymnasium reads the spaces from) as it is; in a worker process it ignores SIGINT and SIGTERM (a terminal's
    Ctrl-C and a SIGTERM sent to the process group reach the workers too: the parent stops the run after
    its iteration and closes the workers) and reports the copy's errors as :class:`AsyncEnvError`, a failed
    constructor on the first ``reset`` (the worker must answer gymnasium's check of the spaces first)."""

    def __init__(self, make: Callable[[], gym.Env], env_id: str | None = None) -> None:
        self.make = make
        self.env_id = env_id  # which a worker's warnings name
        self.parent = os.getpid()
        self.spaces: tuple[gym.Space, gym.Space] | None = None

    def __call__(self) -> gym.Env:
        """The env copy."""
        if os.getpid() == self.parent:  # gymnasium reads the spaces and closes it: a close() that raises is ignored
            env = self.make()
            self.spaces = env.observation_space, env.action_space
            return _QuietClose(env)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            return _Reporting(self.make(), self.env_id)
        except Exception as exc:  # noqa: BLE001 - any error of the env's constructor, reported on reset
            if self.spaces is None:
                raise
            return _Unmade(*self.spaces, f"its constructor raised {raised_in(exc)}")


class _QuietClose(gym.Wrapper):
    """An env copy whose ``close()`` may raise without a word: the parent's copy that gymnasium only reads the spaces
    from (the error stopped the async env's start)."""

    def close(self) -> None:  # noqa: D102
        try:
            self.env.close()
        except Exception:  # noqa: BLE001 - the env's own error, whatever it is; the workers' copies report it
            pass


#: the method of a worker's env copy that :meth:`AsyncErrors.close` calls (gymnasium's ``call``) to close it
CLOSE_COPY = "canter_close_copy"


class _Reporting(gym.Wrapper):
    """A worker's env copy whose ``reset`` and ``step`` errors are one-line :class:`AsyncEnvError`\\ s, and whose
    ``close()`` error is sent to the parent (:data:`CLOSE_COPY`), which warns once for all copies: it was the worker's
    traceback, and its exit code 1, then one warning from each worker."""

    def __init__(self, env: gym.Env, env_id: str | None = None) -> None:
        super().__init__(env)
        self.env_id = env_id
        self.copy_closed = False

    def canter_close_copy(self) -> str | None:
        """Close the copy (:data:`CLOSE_COPY`): the error its ``close()`` raised as one line, or None."""
        self.copy_closed = True
        try:
            self.env.close()
        except Exception as exc:  # noqa: BLE001 - the env's own error, whatever it is
            return raised_in(exc)
        return None

    def close(self) -> None:  # noqa: D102
        if not self.copy_closed:  # a worker ending on an error its reset or step reported: that is the error to see
            self.canter_close_copy()

    def reset(self, **kwargs: Any) -> Any:  # noqa: D102
        try:
            result = self.env.reset(**kwargs)
        except Exception as exc:  # noqa: BLE001 - the env's own error, whatever it is
            raise AsyncEnvError(_raised("reset()", exc)) from None
        if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict)):
            from canter.envs.vector import GYM_API, reset_result  # an old gym env's obs alone: the parent's traceback

            what = reset_result(result)
            raise AsyncEnvError(f"reset() returned {what}, not (obs, info): {GYM_API}")
        self._check_observation(result[0], "reset()")
        return result

    def _check_observation(self, obs: Any, call: str) -> None:
        """An :class:`AsyncEnvError` for an observation that sync vectorization refuses
        (:func:`canter.envs.vector._observation_error`) and the worker's copy into its shared array took without a
        word: one of a Discrete space that is not one whole number (``3.0``, ``array([3])``; a bool, ``True``, is
        taken, as sync vectorization copies it as 1), one of a Box of another shape with as many values (flattened
        into the space's: a (2, 3) observation of a (3, 2) space had its values moved), or values that NumPy's
        stacking does not cast to the Box's dtype (floats of an integer Box: ``1.5`` was copied as 1; complex numbers of
        a float Box: their imaginary parts dropped)."""
        space = self.observation_space
        if isinstance(space, gym.spaces.Discrete):
            if np.shape(obs) == () and np.asarray(obs).dtype.kind in "iub":
                return
            problem = "not one whole number"
        elif isinstance(space, gym.spaces.Box):
            try:
                given = np.asarray(obs)
            except (ValueError, TypeError):  # ragged: the shared array's own error says so
                return
            if given.dtype.kind not in "biufc":  # None: stored as NaN, which the divergence guard names
                return
            if given.shape != space.shape and given.size == int(np.prod(space.shape)):  # (else that error)
                problem = f"not of its shape {space.shape}"
            elif space.dtype is not None and not np.can_cast(given.dtype, space.dtype, "same_kind"):
                problem = f"{given.dtype} values, which sync vectorization does not cast to its {space.dtype}"
            else:
                return
        else:
            return
        from canter.envs.spaces import describe_space

        raise AsyncEnvError(f"{call} returned an observation that does not fit its observation space "
                            f"{describe_space(space)}: {' '.join(repr(obs).split()):.40} ({type(obs).__name__} of shape "
                            f"{np.shape(obs)}), "
                            f"{problem}")

    def step(self, action: Any) -> Any:  # noqa: D102
        try:
            result = self.env.step(action)
        except Exception as exc:  # noqa: BLE001 - the env's own error, whatever it is
            if (isinstance(exc, ValueError) and "(expected 5, got 4)" in str(exc)  # an old gym env's 4 values,
                    and raised_by_the_call(exc)):  # unpacked by a wrapper: not the env's own code's unpacking
                from canter.envs.vector import GYM_API

                raise AsyncEnvError(f"step() returned 4 values, not 5: {GYM_API}") from None
            from canter.envs.vector import _info_error  # no tuple, or an info that is not a dict, met by a wrapper

            known = _info_error(exc)
            if known is not None:
                raise AsyncEnvError(str(known).removeprefix("the env's ")) from None
            raise AsyncEnvError(_raised("step()", exc)) from None
        if not (isinstance(result, tuple) and len(result) == 5):  # else gymnasium's unpacking error in the parent
            from canter.envs.vector import GYM_API, step_result

            raise AsyncEnvError(f"step() returned {step_result(result)}: {GYM_API}")
        if not isinstance(result[4], dict):  # else the parent's AttributeError ('list' object has no attribute 'items')
            from canter.envs.vector import GYM_API

            raise AsyncEnvError(f"step() returned a {type(result[4]).__name__} as its info, where info must be a "
                                f"dict; {GYM_API}")
        self._check_observation(result[0], "step()")
        return result


def _raised(call: str, exc: Exception) -> str:
    """What a copy's ``reset`` or ``step`` raised, as one line: ``step() raised ValueError: boom (env.py, line 3)``; a
    :class:`CanterError` of canter's own check of what the env returned (an observation outside its space, packed in
    the worker: no frame of the user's code) as ``reset(): the observation holds ...``, as sync vectorization words
    it: :func:`raised_in` named canter's own file and line as where it was raised."""
    import traceback

    if isinstance(exc, CanterError) and all(_library_file(f.filename) for f in traceback.extract_tb(exc.__traceback__)):
        return f"{call}: {exc}"
    return f"{call} raised {raised_in(exc)}"


class _Unmade(gym.Env):
    """Stands in a worker for a copy whose constructor raised (with the spaces the parent's copy had);
    its first ``reset`` reports the error."""

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, error: str) -> None:
        self.observation_space, self.action_space, self.error = observation_space, action_space, error

    def reset(self, **kwargs: Any) -> Any:  # noqa: D102
        raise AsyncEnvError(self.error)

    def step(self, action: Any) -> Any:  # noqa: D102
        raise AsyncEnvError(self.error)

    def canter_close_copy(self) -> None:
        """Nothing to close (:data:`CLOSE_COPY`)."""
        return None


@contextmanager
def _quiet() -> Iterator[None]:
    """Keep ``gymnasium.logger`` silent inside (the worker's errors are reported as one line instead)."""
    level = gym.logger.min_level
    gym.logger.min_level = _SILENT
    try:
        yield
    finally:
        gym.logger.min_level = level


def _unsendable(exc: BaseException) -> bool:
    """Whether ``exc`` is a worker's failure to pickle its answer (a lambda or a lock in an info), which gymnasium
    raises again in the parent (``AsyncVectorEnv._raise_if_errors``) as a bare AttributeError or TypeError."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return (tb is not None and tb.tb_frame.f_code.co_name == "_raise_if_errors"
            and "pickle" in str(exc).lower())


class AsyncErrors(gym.vector.VectorWrapper):
    """An ``AsyncVectorEnv`` whose workers' failures are one-line :class:`AsyncEnvError`\\ s naming the env.

    A worker that died (``os._exit``, a signal, a crash in C) is named with its exit code. After a
    call that did not return (a dead worker, a Ctrl-C while the workers stepped), :meth:`close`
    terminates the workers instead of waiting for answers that will not come.

    The copies' state lives in the workers, so a run on them cannot resume exactly: ``resume_problem`` is the
    reason the resume warning gives (:func:`canter.envs.state.capture_env`; it listed the workers' pipes and locks)."""

    resume_problem = ("the env copies run in subprocesses (--vectorization async, or auto where it picks async), whose "
                      "state is not saved; with --vectorization sync, envs whose state can be saved (classic control, "
                      "toy text, Atari on the wrapper path) resume exactly")

    def __init__(self, env: gym.vector.AsyncVectorEnv, env_id: str) -> None:
        super().__init__(env)
        self.env_id = env_id
        self.broken = False  # a call was left unanswered: close() terminates the workers

    def reset(self, *, seed: Any = None, options: dict[str, Any] | None = None) -> Any:
        """Reset every copy (see :meth:`gymnasium.vector.VectorEnv.reset`)."""
        return self._call("reset", self.env.reset, seed=seed, options=options)

    def step(self, actions: Any) -> Any:
        """Step every copy (see :meth:`gymnasium.vector.VectorEnv.step`)."""
        return self._call("step", self.env.step, actions)

    def _call(self, name: str, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        level = gym.logger.min_level  # as _quiet(), without a generator's cost on every step
        gym.logger.min_level = _SILENT
        try:
            return method(*args, **kwargs)
        except AsyncEnvError as exc:  # reported by the worker: the others are still answering
            raise AsyncEnvError(f"env '{self.env_id}' failed in an async worker: {exc}") from None
        except (EOFError, ConnectionError):  # a worker's pipe closed under the call
            self.broken = True
            raise AsyncEnvError(f"env '{self.env_id}': {self._dead_worker()} during {name}()") from None
        except Exception as exc:  # gymnasium's own worker code failed: sending the copy's answer back
            self.broken = True
            if not _unsendable(exc):
                raise
            detail = " ".join(str(exc).split())
            raise AsyncEnvError(f"env '{self.env_id}' failed in an async worker: {name}() returned what cannot be "
                                f"sent to the parent process ({type(exc).__name__}: {detail}); an async worker pickles "
                                f"each info (and observation): keep them to plain data, or use --vectorization sync"
                                ) from None
        except BaseException:  # Ctrl-C while the workers were called: their answers may never be read
            self.broken = True
            raise
        finally:
            gym.logger.min_level = level

    def _dead_worker(self, wait: float = 1.0) -> str:
        """Which worker process died, and how (its pipe may close a moment before its exit is seen)."""
        deadline = time.monotonic() + wait
        while True:
            for i, process in enumerate(self.env.processes):
                code = process.exitcode
                if code is not None:
                    how = f"exit code {code}" if code >= 0 else f"killed by {signal.Signals(-code).name}"
                    return f"async worker {i} died ({how})"
            if time.monotonic() > deadline:
                return "an async worker process closed its pipe"
            time.sleep(0.01)

    def _close_copies(self) -> list[str | None]:
        """Ask each live copy to close itself (:data:`CLOSE_COPY`, gymnasium's ``call`` message) and give back their
        close() errors as lines. Only the workers whose pipe is still open: after a copy's reset or step error
        gymnasium drops that worker's pipe, and its ``call`` on every pipe then failed, which killed the other
        workers with their envs' close() not run."""
        from gymnasium.vector.async_vector_env import AsyncState

        if self.env.closed or self.env._state != AsyncState.DEFAULT:  # as gymnasium's call refuses: a call pending
            raise ConnectionError("the async env is closed, or a call to it is pending")
        pipes = [pipe for pipe in self.env.parent_pipes if pipe is not None]
        for pipe in pipes:
            pipe.send(("_call", (CLOSE_COPY, (), {})))
        answers = [pipe.recv() for pipe in pipes]
        if not all(ok for _, ok in answers):  # a worker failed to answer (it has exited): kill the rest
            raise ConnectionError("an async worker failed to close its copy")
        return [error for error, _ in answers]

    def close(self, **kwargs: Any) -> None:
        """Close the copies and their workers; kill the workers after a call left unanswered. A close that a Ctrl-C
        stops (while the copies close) leaves the workers to the next close, or to the interpreter's exit, which
        kills them: multiprocessing's exit hook waited for them forever (they ignore its SIGTERM)."""
        try:
            error = self._close(**kwargs)
        except BaseException:
            self.broken = True  # answers may be pending: the next close kills the workers
            raise
        _OPEN.discard(self)
        if error is not None:
            from canter.envs.vector import warn_close_error

            warn_close_error(self.env_id, error, " (an async worker's copy)")

    def _close(self, **kwargs: Any) -> str | None:
        """Close the copies and their workers; the first copy's ``close()`` error (one line), or None."""
        with _quiet():
            errors: list[str | None] = []
            if not self.broken:
                try:  # each copy closes itself and answers its close() error: one warning here, not one per worker
                    errors = self._close_copies()
                except Exception:  # noqa: BLE001 - a worker died since the last call (EOFError, BrokenPipeError)
                    self.broken = True
            if not self.broken:
                try:
                    self.env.close(**kwargs)
                except (EOFError, ConnectionError):  # a worker died since the last call
                    pass
                else:
                    return next((e for e in errors if e), None)
            for process in self.env.processes:  # they ignore gymnasium's terminate (SIGTERM)
                if process.is_alive():
                    process.kill()
            for pipe in self.env.parent_pipes:  # unanswered: gymnasium's close would wait for (or read) them
                if pipe is not None:
                    pipe.close()
            self.env.close(terminate=True)
        return None
