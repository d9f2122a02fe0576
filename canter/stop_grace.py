"""The grace period of a stop request (:class:`canter.run.Run`'s first Ctrl-C or SIGTERM).

A first stop signal asks the trainer to stop after the current iteration, so ``last`` can be saved
at an iteration boundary (the only state that resumes exactly). An iteration can be long (PPO with
``n_epochs: 200``, DQN with ``gradient_steps: 10000``, a big evaluation), and a job scheduler or
``docker stop`` sends SIGKILL some seconds after its SIGTERM. So the first signal also starts a
timer: when the iteration has not ended :data:`STOP_GRACE_SECONDS` later (or three times the run's
longest iteration so far, where that is longer: :func:`grace_seconds`), the run quits as a second Ctrl-C does (the half-done iteration is dropped and the previous ``last`` stays, so the resumed run
redoes the work since then identically).

The timer is ``SIGALRM`` (``signal.setitimer``): its handler runs on the main thread between two
Python bytecodes, so the run stops within one torch operation or env step of the grace's end.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

#: seconds an iteration under way may take to end after a first stop signal, before the run quits without
#: saving it (under ``docker stop``'s 10 s and Slurm's 30 s between SIGTERM and SIGKILL)
STOP_GRACE_SECONDS = 5.0
#: the grace is at least this many times the longest iteration the run has taken so far: an iteration of the
#: usual length (an Atari PPO update of several seconds on a CPU, an evaluation) always ends within it and is
#: saved, where dropping it would lose everything since the last periodic checkpoint
GRACE_ITERATIONS = 3.0


def grace_seconds(longest_iteration: float, minimum: float = STOP_GRACE_SECONDS) -> float:
    """The grace of a stop request in a run whose longest iteration so far took ``longest_iteration`` seconds:
    ``minimum``, or :data:`GRACE_ITERATIONS` such iterations where that is longer."""
    return max(minimum, GRACE_ITERATIONS * longest_iteration)


#: the stop handlers installed and not given back yet, oldest first, each with the dict of those it replaced
_INSTALLED: list[tuple[Callable[[int, Any], None], dict[int, Any]]] = []


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@contextmanager
def sigterm_as_ctrl_c(over_any: bool = False) -> Iterator[None]:
    """While a run sets up (its directory made, its loggers started: a W&B init takes seconds), SIGTERM raises
    KeyboardInterrupt as Ctrl-C does, so the run's setup cleans up (a new run's directory is removed) rather than
    the process dying with a half-made run directory that a new run into it, and its resume, refuse. Only where
    SIGTERM has its default action, on the main thread (elsewhere, or with a handler of the caller's: nothing).
    ``over_any``: over any handler too (the CLI, which owns its process: Ray's ``sys.exit``, which ``ray.init``
    put in for a run with explorers); the handler it replaced is put back after."""
    before = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    if before is None or (before != signal.SIG_DFL and not over_any) or before is _interrupt:
        yield
        return
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGTERM) is _interrupt:
            signal.signal(signal.SIGTERM, before)


def install_stop_handlers(handler: Callable[[int, Any], None]) -> dict[int, Any]:
    """Make ``handler`` take SIGINT and SIGTERM (on the main thread only: elsewhere nothing); returns the
    handlers it replaced, to give back with :func:`give_back_stop_handlers`."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    replaced = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    _INSTALLED.append((handler, replaced))
    return replaced


def give_back_stop_handlers(handler: Callable[[int, Any], None], replaced: dict[int, Any]) -> None:
    """Put back the handlers that installing ``handler`` replaced. Where a later install replaced ``handler`` in
    turn (two runs of one process, interleaved, the first ending first), that install gives back ``replaced``
    when it ends instead of ``handler``: a finished run's handler stayed installed, and took the next Ctrl-C."""
    index = next((i for i, (h, _) in enumerate(_INSTALLED) if h == handler), None)
    if index is not None:
        _INSTALLED.pop(index)
        if index < len(_INSTALLED):  # a later one is installed over it: it is given back when that one ends
            later = _INSTALLED[index][1]
            for sig, old in replaced.items():
                if later.get(sig) == handler:
                    later[sig] = old
            return
    for sig, old in replaced.items():
        signal.signal(sig, old)


def start_grace(seconds: float, on_expiry: Callable[[int, Any], None]) -> Callable[[], None] | None:
    """Call ``on_expiry`` (a signal handler: ``(signum, frame)``) ``seconds`` from now, on the main thread.

    Returns the function that cancels it (and gives back the previous ``SIGALRM`` handler), or None
    where no timer is started: off the main thread, on a platform without ``setitimer``, or while
    another timer of the process runs (the program's own ``SIGALRM`` is left alone).
    """
    if (threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer")
            or signal.getitimer(signal.ITIMER_REAL)[0] > 0):
        return None
    old = signal.signal(signal.SIGALRM, on_expiry)
    signal.setitimer(signal.ITIMER_REAL, seconds)

    def cancel() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old if old is not None else signal.SIG_DFL)

    return cancel
