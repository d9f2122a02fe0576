"""Small helpers: seeding, git commit, versions, the allocator setting."""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import random
import select
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


#: the streams of canter's own NumPy generators, kept apart from the envs' (an env reset with seed ``s``
#: draws from ``default_rng(s)``'s stream, and copy ``i`` of a vector env gets ``seed + i``)
STREAMS = {"dataset": 1, "replay": 2, "warmup": 3, "on_policy_replay": 4, "offline": 5, "sharded": 6, "explorer": 7}


def stream_rng(seed: int, stream: str) -> np.random.Generator:
    """A NumPy generator for canter's own use ``stream`` (a key of :data:`STREAMS`) from ``seed``.

    ``np.random.default_rng(seed)`` would be the very stream an env reset with ``seed`` draws from
    (gymnasium seeds ``np_random`` the same way), so replay sampling, warm-up actions or exploration
    coins would reuse the bits of an env copy's noise; ``[seed, stream]`` is a separate stream."""
    return np.random.default_rng([int(seed), STREAMS[stream]])


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask; all of them where there is none)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def cpu_info(field: str) -> str | None:
    """A field of Linux's ``/proc/cpuinfo`` for the first CPU (e.g. ``vendor_id``, ``model name``);
    None where the file or the field is missing."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() == field:
                return value.strip()
    except OSError:
        pass
    return None


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)


@functools.cache
def keep_freed_memory() -> bool:
    """Make glibc's malloc keep freed memory in the process instead of handing it back to the OS.

    torch allocates every CPU tensor with malloc and frees it when the tensor dies. By default glibc
    serves large blocks with fresh ``mmap`` calls and trims the heap as soon as its free top passes a
    few MB, so a multi-MB activation that is rebuilt every update page-faults on every one of its
    pages each time. Raising the mmap threshold to glibc's maximum (32 MiB) and the trim threshold to
    1 GiB lets those blocks be reused warm: DQN's batched target-network pass over 8192 observations
    (256-unit layers) measured 22 ms without and 8 ms with it on this project's CPU. Process-wide
    and permanent (glibc has no getter to restore from); retained memory is bounded by the peak
    actually used. Returns False where the C library is not glibc (nothing is changed then).
    """
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return False
    if libc is None or not hasattr(libc, "mallopt") or not hasattr(libc, "gnu_get_libc_version"):
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)) and bool(libc.mallopt(_M_TRIM_THRESHOLD, 1 << 30))


def _git(where: str, *args: str) -> str | None:
    """``git -C where ARGS``'s stripped output, or None where git is missing, fails or takes over 5 s."""
    try:
        out = subprocess.run(["git", "-C", where, *args], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _head_and_dirty(where: str) -> tuple[str | None, bool | None]:
    """The short (8-char) sha of HEAD of the repository at ``where`` and whether its tracked files differ from it
    (None: unknown); ``(None, None)`` without a commit."""
    sha = _git(where, "rev-parse", "--short=8", "HEAD")
    if not sha:
        return None, None
    changes = _git(where, "status", "--porcelain", "--untracked-files=no")
    return sha, None if changes is None else bool(changes)


@functools.lru_cache(maxsize=1)
def git_state() -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the git checkout canter's own source is tracked in: the short (8-char) sha of
    its HEAD and whether its tracked files differ from it; ``(None, None)``, unknown, for canter installed
    outside a checkout (a wheel, site-packages inside some other repository, which does not track canter's
    files) or where git is not on PATH. The working directory's repository is not canter's and is not asked."""
    here = str(Path(__file__).resolve().parent)
    if _git(here, "ls-files", "--error-unmatch", "--", "__init__.py") is None:  # canter's files not in its repo
        return None, None
    return _head_and_dirty(here)


def git_commit() -> str | None:
    """Short (8-char) commit sha of the checkout holding canter's source, or None when unknown (:func:`git_state`)."""
    return git_state()[0]


def git_dirty() -> bool | None:
    """Whether canter's checkout has uncommitted changes to tracked files; None when unknown (:func:`git_state`)."""
    return git_state()[1]


@functools.lru_cache(maxsize=4)
def project_git_state(where: str | None = None) -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the git repository that holds the working directory (``where``), the user's project
    whose scripts and configs ran canter, as :func:`git_state` gives canter's own; ``(None, None)`` outside a
    repository, without git, or where that repository is canter's own checkout (recorded as ``git_commit``)."""
    where = where or str(Path.cwd())
    top = _git(where, "rev-parse", "--show-toplevel")
    if not top:
        return None, None
    own = _git(str(Path(__file__).resolve().parent), "rev-parse", "--show-toplevel")
    if own and Path(own).resolve() == Path(top).resolve() and git_state()[0] is not None:
        return None, None
    return _head_and_dirty(where)


def provenance() -> dict[str, Any]:
    """What checkpoints, datasets and ``summary.json`` record of the code: canter's version, its checkout's commit
    and dirty flag (:func:`git_state`), and the working directory's project's (:func:`project_git_state`)."""
    sha, dirty = git_state()
    try:
        where = os.getcwd()
    except OSError:  # the working directory was removed while the run trained: no project to ask
        where = None
    project, project_dirty = (None, None) if where is None else project_git_state(where)
    return {"canter_version": canter_version(), "git_commit": sha, "git_dirty": dirty,
            "project_git_commit": project, "project_git_dirty": project_dirty}


def canter_version() -> str:
    """Installed canter version."""
    from canter import __version__

    return __version__


class RunningMeanStd:
    """Running mean and variance (parallel update formula of Chan et al.)."""

    def __init__(self, shape: tuple[int, ...] = ()) -> None:
        self.mean = np.zeros(shape, dtype=np.float64)
        self.var = np.ones(shape, dtype=np.float64)
        self.count = 1e-4

    def update(self, x: np.ndarray) -> None:
        """Fold a batch ``[B, *shape]`` into the statistics (the same ones whatever the batch's memory layout)."""
        # row-major first: NumPy reduces a column-major batch (a native vector env's observations) pairwise and
        # a row-major one (a resumed run's first batch, from the checkpoint) row by row, an ulp apart
        x = np.ascontiguousarray(x)
        b_mean, b_var, b_count = x.mean(axis=0), x.var(axis=0), x.shape[0]
        delta = b_mean - self.mean
        total = self.count + b_count
        # np.asarray: statistics of shape () stay 0-d arrays (NumPy's reductions return scalars), so a
        # live agent's state has the same structure as one loaded from a checkpoint
        self.mean = np.asarray(self.mean + delta * b_count / total, dtype=np.float64)
        m2 = self.var * self.count + b_var * b_count + delta**2 * self.count * b_count / total
        self.var = np.asarray(m2 / total, dtype=np.float64)
        self.count = total

    def state_dict(self) -> dict[str, Any]:
        """Mean, variance and count, for checkpoints."""
        return {"mean": self.mean, "var": self.var, "count": self.count}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` saved, in these statistics' own shape."""
        # reshaped to the statistics' own shape: a checkpoint before 2026-11-27 saved a 0-d array (the return's) 1-d
        self.mean = np.asarray(state["mean"], dtype=np.float64).reshape(np.shape(self.mean)).copy()
        self.var = np.asarray(state["var"], dtype=np.float64).reshape(np.shape(self.var)).copy()
        self.count = float(state["count"])

def set_torch_threads(threads: int | None) -> int | None:
    """Set torch's intra-op thread count to ``threads`` (None or 0: leave it) where it differs, returning the count it
    replaced (to put back with ``torch.set_num_threads``), or None where nothing changed. Cheap (well under a
    microsecond): :meth:`Agent.predict <canter.agents.Agent.predict>` calls it each time to act at its run's
    ``torch_threads`` rather than its caller's count (a two-thread pool on a busy 2-core host made a recurrent
    agent's predict ~15x slower than one thread)."""
    if not threads:
        return None
    caller = torch.get_num_threads()
    if caller == threads:
        return None
    torch.set_num_threads(threads)
    return caller


@contextlib.contextmanager
def agent_threads(agent: Any) -> Iterator[None]:
    """Run the block at ``agent``'s ``acting_threads`` (torch's count as its run trained; none: the caller's), putting
    the caller's count back on leaving."""
    caller = set_torch_threads(getattr(agent, "acting_threads", None))
    try:
        yield
    finally:
        if caller is not None:
            torch.set_num_threads(caller)


#: the thread counts each open :func:`threads_kept_in_turn` block found on entering, in the order they were entered
_KEPT_IN_TURN: list[list[Any]] = []


@contextlib.contextmanager
def threads_kept_in_turn() -> Iterator[None]:
    """:func:`threads_kept` for blocks that may be left in any order (the loops of two trainers of one process,
    iterated in turn): a block left while one entered after it is still open hands that one what it found, so the
    caller's counts are back once all are left (the first trainer's count stayed, handed back by the second)."""
    from canter.models.linear import blas_state, restore_blas_threads

    entry = [torch.get_num_threads(), blas_state()]
    _KEPT_IN_TURN.append(entry)
    try:
        yield
    finally:
        index = next(i for i, e in enumerate(_KEPT_IN_TURN) if e is entry)
        _KEPT_IN_TURN.pop(index)
        if index < len(_KEPT_IN_TURN):
            _KEPT_IN_TURN[index][:] = entry  # the block entered after it found this one's counts: it gives back these
        else:
            torch.set_num_threads(entry[0])
            restore_blas_threads(entry[1])


@contextlib.contextmanager
def threads_kept() -> Iterator[None]:
    """Put torch's intra-op thread count and NumPy's BLAS thread count back as they were on leaving."""
    from canter.models.linear import blas_state, restore_blas_threads

    torch_threads, blas = torch.get_num_threads(), blas_state()
    try:
        yield
    finally:
        torch.set_num_threads(torch_threads)
        restore_blas_threads(blas)  # OpenBLAS's own pool size if the caller had never limited it


@contextlib.contextmanager
def global_rngs_kept() -> Iterator[None]:
    """Put Python's, NumPy's and torch's global random states back as they were on leaving."""
    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    # CUDA not started yet: its generators will start from the last torch.manual_seed (queued until then; torch's
    # default seed is the CPU's too), i.e. torch.initial_seed(); a seeding inside the block must not replace that
    cuda_seed = torch.initial_seed() if cuda is None else None
    try:
        yield
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])
        if cuda is not None:  # torch.manual_seed reseeds every CUDA device too
            torch.cuda.set_rng_state_all(cuda)
        elif torch.cuda.is_available():  # started inside (a run on a GPU), or its seeding still queued
            torch.cuda.manual_seed_all(cuda_seed)


def stdout_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it (``canter list | head -1``)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a StringIO): writing to it breaks no pipe
        return False
    if not hasattr(select, "poll"):  # Windows: cannot tell, so as before
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def to_numpy(x: torch.Tensor | np.ndarray) -> np.ndarray:
    """``x`` as a NumPy array in host memory: an array as it is, a CPU tensor as a view sharing its memory
    (detached), a tensor on another device (a GPU) copied to the host."""
    if isinstance(x, np.ndarray):
        return x
    if x.requires_grad:  # (detach() costs ~1 us per call: only where .numpy() needs it)
        x = x.detach()
    return x.numpy() if x.device.type == "cpu" else x.cpu().numpy()


def wrapper_method(env: Any, name: str) -> Any:
    """The callable ``name`` of ``env`` or of an env it wraps (gymnasium's ``get_wrapper_attr``), or None."""
    try:
        method = env.get_wrapper_attr(name)
    except AttributeError:
        return None
    return method if callable(method) else None
