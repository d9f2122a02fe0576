"""Measure several benchmark processes in the same stretch of time by running them in turns.

The machines these benchmarks run on are shared: the same loop runs up to ~2x faster or slower
from one minute to the next (neighbouring tenants' load on caches and cores, not time stolen from
the process, so CPU time drifts just as wall time does). Measured one after the other, canter and
Stable-Baselines3 can land in different spells and their ratio moves with them. Here the processes
start together and take turns on the machine: :func:`run_interleaved` lets one run for a slice
of a second or so while it holds the others stopped (``SIGSTOP`` / ``SIGCONT``), round after
round, and gives a slower process a longer slice so that all of them advance through their
budgets at about the same pace and finish together. Every process then samples the same spells.

Each process reports the ``time.monotonic()`` instants its measured loop started and ended and
any intervals inside it to leave out (canter's evaluation after the budget); its time is the part
of the slices it was given that falls in its loop and outside those intervals
(:func:`active_seconds`). ``CLOCK_MONOTONIC`` is one clock for every process on the machine.
Only one process runs at any moment, as in the sequential measurements. Linux (and other POSIX
systems) only.
"""
from __future__ import annotations

import mmap
import os
import signal
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Sequence

from _common import tagged_json

Interval = tuple[float, float]

#: the environment variable through which a worker learns where to report its progress
PROGRESS_ENV = "BENCH_PROGRESS_FILE"


def overlap(a: Interval, intervals: Sequence[Interval]) -> float:
    """Seconds of ``a`` covered by ``intervals`` (which must not overlap each other)."""
    lo, hi = a
    return sum(max(0.0, min(hi, e) - max(lo, s)) for s, e in intervals)


def active_seconds(window: Interval, slices: Sequence[Interval], exclude: Sequence[Interval] = ()) -> float:
    """Seconds of ``window`` during which the process ran (covered by its ``slices``), less the
    running time inside the ``exclude`` intervals (which lie inside ``window``)."""
    return overlap(window, slices) - sum(overlap(e, slices) for e in exclude)


class ProgressReporter:
    """A worker's side of the progress file: the fraction of its budget done, one float64 written
    in place. It only steers the length of the worker's turns, never what is measured. Does
    nothing without a file (the worker then runs on its own). Standard library only: a worker
    times its own imports after creating this."""

    def __init__(self, path: str | None = None) -> None:
        path = path if path is not None else os.environ.get(PROGRESS_ENV)
        self._view = None
        if path:
            fd = os.open(path, os.O_RDWR)
            try:
                self._map = mmap.mmap(fd, 8)
            finally:
                os.close(fd)
            self._view = memoryview(self._map).cast("d")

    def update(self, fraction: float) -> None:
        """Record that ``fraction`` (0 to 1) of the budget is done."""
        if self._view is not None:
            self._view[0] = fraction


def _wait_stopped(pid: int, limit: float = 1.0) -> None:
    """Return once ``pid`` is really stopped (or gone): ``kill`` only queues the signal, and a process
    running on the other core can go on for a moment (it did for ~1 ms per turn on a busy 2-core VM).
    Reads ``/proc``; elsewhere returns at once."""
    stat, deadline = Path(f"/proc/{pid}/stat"), time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return
        if state in ("T", "t", "Z", "X"):
            return
        time.sleep(0.0001)


def _read_progress(path: Path) -> float:
    return struct.unpack("d", path.read_bytes()[:8])[0]


class _Proc:
    """One process of an interleaved run: started, then held stopped until its first turn."""

    def __init__(self, cmd: list[str], workdir: Path, index: int) -> None:
        self.progress_path = workdir / f"progress{index}"
        self.progress_path.write_bytes(struct.pack("d", 0.0))
        self.out_path, self.err_path = workdir / f"out{index}", workdir / f"err{index}"
        env = dict(os.environ, **{PROGRESS_ENV: str(self.progress_path)})
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as the sequential runs: compiled .pyc files, as after pip install
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.popen = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        os.kill(self.popen.pid, signal.SIGSTOP)
        _wait_stopped(self.popen.pid)
        self.cmd = cmd
        self.slices: list[Interval] = []
        self.progress = 0.0  # the fraction of its budget it reported by the end of its last turn
        self.first: tuple[float, float] | None = None  # (active seconds, progress) when progress was first seen

    def active(self) -> float:
        return sum(e - s for s, e in self.slices)

    def run_for(self, seconds: float) -> None:
        start = time.monotonic()
        os.kill(self.popen.pid, signal.SIGCONT)
        try:
            self.popen.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            os.kill(self.popen.pid, signal.SIGSTOP)
            _wait_stopped(self.popen.pid)
        self.slices.append((start, time.monotonic()))
        progress = _read_progress(self.progress_path)
        if self.first is None and progress > 0:
            self.first = (self.active(), progress)
        self.progress = progress

    def rate(self) -> float | None:
        """Budget fraction per second of running, since progress was first seen (None before)."""
        if self.first is None:
            return None
        dt, dp = self.active() - self.first[0], self.progress - self.first[1]
        return dp / dt if dt > 0 and dp > 0 else None


def run_interleaved(cmds: Sequence[list[str]], slice_s: float = 0.25, max_slice_factor: float = 8.0,
                    timeout: float = 3600.0) -> list[tuple[str, list[Interval]]]:
    """Run ``cmds`` in turns until every one has exited; returns each one's stdout and the
    ``time.monotonic()`` intervals it ran.

    The process advancing fastest through its budget (per :class:`ProgressReporter`) runs
    ``slice_s`` per turn, the others proportionally longer (at most ``max_slice_factor`` times
    as long), so that they finish at about the same time. Raises ``RuntimeError`` with a failing
    process's stderr; every process left is killed on the way out.
    """
    with tempfile.TemporaryDirectory(prefix="bench-interleave-") as tmp:
        procs = [_Proc(list(cmd), Path(tmp), i) for i, cmd in enumerate(cmds)]
        deadline = time.monotonic() + timeout
        try:
            while any(p.popen.returncode is None for p in procs):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"interleaved run exceeded {timeout:.0f} s")
                live = [p for p in procs if p.popen.returncode is None]
                rates = [p.rate() for p in live]
                fastest = max((r for r in rates if r), default=None)
                for p, r in zip(live, rates):
                    factor = 1.0 if fastest is None or not r else min(max_slice_factor, fastest / r)
                    # the last one left runs to its end (or the deadline) in one turn
                    p.run_for(slice_s * factor if len(live) > 1 else max(0.0, deadline - time.monotonic()))
                    if p.popen.returncode not in (None, 0):
                        raise RuntimeError(f"command failed ({p.popen.returncode}): {' '.join(p.cmd)}\n"
                                           f"{p.err_path.read_text()[-3000:]}")
            return [(p.out_path.read_text(), p.slices) for p in procs]
        finally:
            for p in procs:
                if p.popen.returncode is None:
                    p.popen.kill()
                    p.popen.wait()


def results_in_turns(cmds: Sequence[list[str]], tag: str, **kwargs: object) -> list[dict]:
    """:func:`run_interleaved` for worker commands that each print one ``tag``-prefixed JSON line
    holding ``loop_mono`` (their loop's start and end) and ``eval_mono`` (intervals to leave out):
    those results, each with ``active_s`` (:func:`active_seconds` of its turns) and ``turns`` added."""
    results = []
    for stdout, slices in run_interleaved(cmds, **kwargs):
        res = tagged_json(stdout, tag)
        res["active_s"] = active_seconds(tuple(res["loop_mono"]), slices, [tuple(e) for e in res["eval_mono"]])
        res["turns"] = len(slices)
        results.append(res)
    return results
