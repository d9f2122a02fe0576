"""How ``canter tune`` stops on Ctrl-C: ``--jobs`` worker processes, and a Ctrl-C held back while the study
writes to its storage.

A Ctrl-C raised inside one of Optuna's storage commits (``ask``, ``report``, the ``tell`` that ends a trial)
can leave the SQLite database locked: the trial that was interrupted could then not be marked failed, and
Optuna's own bookkeeping failed on that (``UnboundLocalError`` after "database is locked"), with a traceback
from each worker. :class:`Interrupts` raises the Ctrl-C only while a trial trains and keeps it for later
elsewhere: the training stops at once, and the storage sees whole writes only.
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from canter.errors import CanterError


class Interrupts:
    """A SIGINT / SIGTERM handler that raises KeyboardInterrupt only inside :meth:`opened` blocks (a trial's
    training) and, everywhere else, remembers it (``pending``) for the next block or the caller to raise."""

    def __init__(self) -> None:
        self.open, self.pending = True, False

    def handler(self, signum: int, frame: Any) -> None:
        """The signal handler: raise now, or keep it for later."""
        self.pending = True
        if self.open:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def opened(self) -> Iterator[None]:
        """A block a Ctrl-C may cut (one held back so far is raised on entry)."""
        if self.pending:
            raise KeyboardInterrupt
        before, self.open = self.open, True
        try:
            yield
        finally:
            self.open = before

    @contextlib.contextmanager
    def held(self, signums: tuple[int, ...] = ()) -> Iterator[None]:
        """Install :meth:`handler` for ``signums`` (none: for the signals already routed here) with the Ctrl-C held
        back outside :meth:`opened` blocks; on leaving, raise one held back. Outside the main thread (where
        no handler can be set) nothing is held back."""
        old, self.pending = {}, False  # a Ctrl-C of an earlier study in this process is not this one's
        if signums:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            old = {signum: signal.signal(signum, self.handler) for signum in signums}
        before, self.open = self.open, False
        try:
            yield
        finally:
            self.open = before
            for signum, handler in old.items():
                if handler is not None:
                    signal.signal(signum, handler)
        if self.pending:
            raise KeyboardInterrupt

    def stop_study(self, study: Any, trial: Any) -> None:
        """Optuna callback: a Ctrl-C held back while a trial ended stops the study before it asks for another."""
        if self.pending:
            study.stop()


INTERRUPTS = Interrupts()  # this process's: tune's single process, or one --jobs worker


def caused_by_interrupt(exc: BaseException) -> bool:
    """True when a KeyboardInterrupt is in ``exc``'s chain of causes and contexts."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _sigterms_taken() -> int:
    """:func:`canter.distributed.cluster.sigterms_taken`, or 0 where that module was never imported (no trial used
    Ray: nothing installed its handler)."""
    cluster = sys.modules.get("canter.distributed.cluster")
    return cluster.sigterms_taken() if cluster is not None else 0


def stopped_by_sigterm(exc: SystemExit, taken_before: int = 0) -> bool:
    """Whether ``exc`` is the ``SystemExit`` of a SIGTERM taken by a handler that a trial installed: the one
    ``ray.init`` sets (``sys.exit(15)``) for a trial with explorers, which Ray may turn into ``SystemExit(1)`` while it
    waits (:mod:`canter.distributed.cluster` counts the SIGTERMs it takes; ``taken_before`` is its count when the trial
    began: a SIGTERM that stopped an earlier run in this process does not count)."""
    return exc.code == signal.SIGTERM or _sigterms_taken() > taken_before


@contextlib.contextmanager
def trial_signals() -> Iterator[Callable[[], None]]:
    """Around one trial: a SIGTERM is a Ctrl-C, also in a trial that put a handler of its own in place of
    :data:`INTERRUPTS`' (``ray.init``, for a trial with ``explorers``: its ``sys.exit`` ended tune with exit code 15, no
    message, and the trial left RUNNING; and it stayed in force for the study's storage writes and later trials).
    Its ``SystemExit`` is raised as a KeyboardInterrupt, and the SIGTERM handler of before the trial is put back.
    Yields the function that puts it back at once (after the trainer's first record: Ray is up), so that a SIGTERM
    during the trial's own storage writes (``trial.report``, cut in the middle by ``sys.exit``) is held back too."""
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGTERM) if main else None
    taken = _sigterms_taken()

    def reclaim() -> None:
        if before is not None and signal.getsignal(signal.SIGTERM) is not before:
            signal.signal(signal.SIGTERM, before)

    try:
        yield reclaim
    except SystemExit as exc:
        if not stopped_by_sigterm(exc, taken):
            raise
        INTERRUPTS.pending = True
        raise KeyboardInterrupt from None
    finally:
        reclaim()


def _watch_parent(parent: int, every: float = 0.5) -> None:
    """Send this process a SIGTERM, as the parent does on a Ctrl-C, once ``parent`` is no longer its parent (it was
    killed with SIGKILL, which it cannot pass on: the worker trained on alone, an orphan)."""
    while os.getppid() == parent:
        time.sleep(every)
    os.kill(os.getpid(), signal.SIGTERM)


def _worker(job: dict[str, Any], worker: int, parent: int | None = None) -> None:
    """Entry point of one ``--jobs`` process (started deaf to SIGINT: a Ctrl-C comes from the parent as a
    SIGTERM, held back while the study writes, so the running trial is marked failed). With ``parent`` (its
    pid), the worker stops in the same way when that process dies."""
    from canter.tools.tune import _optimize

    signal.signal(signal.SIGTERM, INTERRUPTS.handler)  # raises at once until _optimize holds it back
    if parent is not None:
        threading.Thread(target=_watch_parent, args=(parent,), name="canter-tune-parent", daemon=True).start()
    try:
        _optimize(job, worker)
    except KeyboardInterrupt:  # the Ctrl-C the parent passed on: the parent says it, this process quietly ends
        raise SystemExit(130) from None
    except CanterError as exc:  # one line, as the parent's own (a storage this worker cannot open, ...)
        if INTERRUPTS.pending or caused_by_interrupt(exc):
            raise SystemExit(130) from None
        print("canter: error: " + " ".join(str(exc).split()), file=sys.stderr, flush=True)
        raise SystemExit(2) from None
    except Exception as exc:
        # whatever failed after the parent asked this worker to stop (a storage commit the Ctrl-C cut) is the
        # Ctrl-C's doing: the parent reports the interruption once
        if INTERRUPTS.pending or caused_by_interrupt(exc):
            raise SystemExit(130) from None
        raise


def _interrupt(signum: int, frame: Any) -> None:
    """A SIGTERM handler: stop as a Ctrl-C does."""
    raise KeyboardInterrupt


#: the signals that stop ``canter tune`` as a Ctrl-C: a SIGTERM (``kill``, a job scheduler, ``docker stop``) too,
#: as it stops ``canter train``
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def run_workers(job: dict[str, Any], jobs: int) -> None:
    """Run ``jobs`` worker processes on the study until they finish.

    The workers start with SIGINT ignored (a process keeps an ignored SIGINT through Python's start-up),
    so a Ctrl-C to the process group while they import torch prints no traceback from them; this
    process catches it, or a SIGTERM sent to it alone, and sends each worker a SIGTERM: one still starting
    ends at once (it has no trial yet), one training marks its trial failed and ends."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_worker, args=(job, i + 1, os.getpid()), name=f"canter-tune-{i + 1}")
             for i in range(jobs)]
    main = threading.current_thread() is threading.main_thread()  # signal.signal works only there
    old_term = signal.signal(signal.SIGTERM, _interrupt) if main else None
    try:
        old = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
        try:
            for p in procs:
                p.start()
        finally:
            if main:
                signal.signal(signal.SIGINT, old)
        for p in procs:
            p.join()
    except KeyboardInterrupt:  # pass it on, and let the workers mark their trials failed first
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            if p.pid is not None:  # started
                p.join(timeout=30)
        raise
    finally:
        if main:
            signal.signal(signal.SIGTERM, old_term)
    failed = [p.name for p in procs if p.exitcode]
    if failed:
        raise CanterError(f"tune worker(s) {', '.join(failed)} exited with an error; the study keeps their finished trials")
