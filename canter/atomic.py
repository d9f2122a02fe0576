"""Atomic file writes: a kill at any point leaves either the old file or the new one (temp file next to the
target, fsync, rename). Checkpoints (:mod:`canter.checkpoint`), run files, history tables, reports and plots are
written this way."""
from __future__ import annotations

import errno
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


def _umask() -> int:
    """The process's umask, read without changing it where Linux allows (no race with other threads)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path next to ``path``, for a writer that opens files by name; the file written there
    replaces ``path`` (fsynced) when the block succeeds.

    A kill at any point leaves either the old file or the new one; on an error the temporary
    file is removed and ``path`` is untouched.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:  # a file where a directory of the path should be: name it as such
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), exc.filename) from None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:  # name the file the caller asked for, not the temporary one
        raise type(exc)(exc.errno, exc.strerror, str(path)) from None
    try:
        os.close(fd)
        yield Path(tmp)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            # mkstemp makes 0600 files (and a writer may make its own): give what open() would
            os.fchmod(fd, 0o666 & ~_umask())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename in (None, tmp) and exc.errno is not None:
            # a full disk (ENOSPC) or an I/O error from write/fsync: name the caller's file
            raise type(exc)(exc.errno, exc.strerror, str(path)) from None
        raise


@contextmanager
def made_dirs(folder: Path) -> Iterator[None]:
    """Make ``folder`` and its missing parents for the block; when the block fails, remove again those it made that
    are still empty (deepest first): a failed save (a full disk) left the directories it had made."""
    folder = Path(folder)
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except FileExistsError as exc:  # a file where a directory of the path should be: name it as such
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), exc.filename) from None
        yield
    except BaseException:
        for p in missing:
            try:
                p.rmdir()
            except OSError:  # not made, or not empty (another writer's files there): it stays, as do those above
                break
        raise


@contextmanager
def atomic_file(path: Path) -> Iterator[BinaryIO]:
    """A temporary file next to ``path`` (open for writing) that replaces ``path`` (fsynced) when the block
    succeeds: as :func:`atomic_path`."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        yield f


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a kill leaves either the old file or the new one."""
    with atomic_file(path) as f:
        f.write(data)


#: the name of an atomic write's temp file (``mkstemp(prefix=".NAME.", suffix=".tmp")``): NAME, random letters
_TEMP_NAME = re.compile(r"\.(.+)\.[a-z0-9_]+\.tmp")


def temp_file_target(name: str) -> str | None:
    """The file name whose killed :func:`atomic_write` left a temp file named ``name`` (``.NAME.<random>.tmp``),
    or None where ``name`` is not such a temp file's."""
    found = _TEMP_NAME.fullmatch(name)
    return found.group(1) if found else None


def remove_temp_files(directory: str | Path, names: tuple[str, ...]) -> list[Path]:
    """Delete the temp files that a killed :func:`atomic_write` of a file whose name ends with one of ``names`` left
    in ``directory`` (another ``.*.tmp``, a user's own file, stays); returns them."""
    removed = []
    for p in Path(directory).glob(".*.tmp"):
        target = temp_file_target(p.name)
        if target is not None and target.endswith(names):
            p.unlink(missing_ok=True)
            removed.append(p)
    return removed
