"""One writer per run directory: ``RUN_DIR/.canter.lock`` names the process training into it.

A :class:`~canter.run.Run` takes the lock when its generator starts and removes it when the
generator ends, so two trainings never write the same directory: a second process, or a
``canter.resume`` in the same process while an earlier loop over the directory was left without
closing it, gets a one-line :class:`~canter.errors.CanterError` before anything is written.

The file holds the writer's host name, pid and a random token. A lock whose process is gone
(killed with ``kill -9``) is stale and is taken over, so ``--resume`` after a hard kill works as
before. A lock with this process's pid counts only while this process really holds it. Processes of
one host judge and write the lock one at a time (a ``flock`` on the directory), so two resumes of a
killed run that start together never both take its stale lock over. A lock written on another host
(a run directory on a shared filesystem) cannot be checked from here, so it counts as held: the
error names the host and says to delete the lock if nothing trains there.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from canter.atomic import atomic_write
from canter.errors import CanterError

LOCK_NAME = ".canter.lock"
#: run directories (resolved) whose lock this process holds -> the lock's token
_HELD: dict[Path, str] = {}
if hasattr(os, "register_at_fork"):  # a forked child holds none of its parent's locks
    os.register_at_fork(after_in_child=_HELD.clear)


def _key(run_dir: str | Path) -> Path:
    return Path(run_dir).resolve()


def _read(path: Path) -> dict | None:
    """The lock's ``{"host", "pid", "token"}``, or None when there is none (an unreadable lock counts as stale)."""
    try:
        data = json.loads(path.read_text())
        return data if isinstance(data, dict) and isinstance(data.get("pid"), int) else {"pid": -1}
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return {"pid": -1}


def _alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists (one of another user counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # Linux: a killed child its parent has not reaped yet (a zombie) is gone too
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat[stat.rindex(")") + 2:][:1] != "Z"
    except (OSError, ValueError):
        return True


def holder(run_dir: str | Path) -> str | None:
    """Who is writing ``run_dir`` (a phrase for an error message), or None when nobody is."""
    lock = _read(Path(run_dir) / LOCK_NAME)
    if lock is None:
        return None
    host = lock.get("host")
    if isinstance(host, str) and host != socket.gethostname():  # its pid means nothing here
        return f"process {lock['pid']} on host '{host}'"
    if lock["pid"] == os.getpid():
        return "an unfinished run in this process" if _key(run_dir) in _HELD else None
    return f"process {lock['pid']}" if _alive(lock["pid"]) else None


def check_free(run_dir: str | Path) -> None:
    """Raise a one-line CanterError when another run is writing ``run_dir``."""
    who = holder(run_dir)
    if who is None:
        return
    if who.startswith("an unfinished"):
        raise CanterError(f"run directory '{run_dir}' is still open in this process (a training loop over it was "
                          f"left without closing it): call that run's close() first")
    raise CanterError(f"run directory '{run_dir}' is being written by {who}; wait for it to finish, or delete "
                      f"{Path(run_dir) / LOCK_NAME} if no canter process is training there")


def acquire(run_dir: str | Path) -> str:
    """Take ``run_dir``'s lock (taking over a stale one); returns the token :func:`release` needs."""
    check_free(run_dir)
    token = secrets.token_hex(8)
    path = Path(run_dir) / LOCK_NAME
    data = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "token": token}).encode()
    with _one_taker(Path(run_dir)):  # two takers of one stale lock both found it stale and both wrote theirs
        check_free(run_dir)
        if not _create(path, data, token):  # a lock is there: a stale one, or another writer's since check_free
            check_free(run_dir)
            atomic_write(path, data)  # taking over a stale lock: old lock or new, never half
    _HELD[_key(run_dir)] = token
    return token


@contextmanager
def _one_taker(run_dir: Path) -> Iterator[None]:
    """Let one process of this host at a time judge and write ``run_dir``'s lock: an exclusive ``flock`` on the
    directory itself (no file is made; the kernel gives it back when the process dies). Where there is no
    ``flock`` (another OS, a file system without it) nothing is held: the lock is then as safe as before."""
    try:
        import fcntl

        fd = os.open(run_dir, os.O_RDONLY)
    except (ImportError, OSError):
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)  # gives the flock back


def _create(path: Path, data: bytes, token: str) -> bool:
    """Write the lock only if there is none (False if there is): complete, and never over another's."""
    tmp = path.with_name(f"{LOCK_NAME}.{token}.tmp")
    try:
        tmp.write_bytes(data)
        try:
            os.link(tmp, path)  # atomic and fails on an existing file: two starting writers never both win
        except FileExistsError:
            return False
        except OSError:  # a filesystem without hard links
            if path.exists():
                return False
            os.replace(tmp, path)
        return True
    finally:
        tmp.unlink(missing_ok=True)


def release(run_dir: str | Path, token: str) -> None:
    """Remove ``run_dir``'s lock if it is still the one ``token`` took, in this process (a forked child,
    which has the parent's token, never removes the parent's lock)."""
    _HELD.pop(_key(run_dir), None)
    path = Path(run_dir) / LOCK_NAME
    lock = _read(path)
    if lock is not None and lock.get("token") == token and lock.get("pid") == os.getpid():
        try:
            path.unlink()
        except FileNotFoundError:
            pass
