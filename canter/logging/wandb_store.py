"""The last step a W&B run's own offline transaction logs hold (``RUN_DIR/wandb/*/run-<id>.wandb``).

wandb-core writes each run's records to its ``.wandb`` file in 32 KiB blocks (the LevelDB log format: a 7-byte
``:W&B`` header, then records of a 7-byte header, crc32 little-endian, length, type, and a protobuf ``Record``); a
process killed with ``kill -9`` leaves the file at the last block it wrote, without the points logged after it
(measured with wandb 0.31 offline: 12 s into a PPO CartPole run, the file held steps to 58,368 of the 70,656 logged).
A resumed run reads what W&B holds from these files, so it logs those points again instead of leaving a gap."""
from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

BLOCK, HEADER = 32768, 7
FILE_HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def _records(data: bytes, start: int, stop: int) -> Iterator[bytes]:
    """The records that begin in ``data[start:stop]`` (``start`` a block's start; a record continued from an
    earlier block is skipped), up to the first damaged or cut one (the tail a kill left unwritten)."""
    pos, parts = max(start, HEADER), None
    while pos + HEADER <= len(data) and (pos < stop or parts is not None):
        left = BLOCK - pos % BLOCK
        crc, size, kind = struct.unpack_from("<IHB", data, pos) if left >= HEADER else (0, 0, 0)
        if left < HEADER or (crc, size, kind) == (0, 0, 0):  # a block's zero padding
            pos += left
            continue
        body = data[pos + HEADER:pos + HEADER + size]
        if len(body) < size or zlib.crc32(body, zlib.crc32(bytes([kind]))) != crc:
            return
        pos += HEADER + size
        if kind == FULL:
            yield body
        elif kind == FIRST:
            parts = [body]
        elif kind == MIDDLE and parts is not None:
            parts.append(body)
        elif kind == LAST and parts is not None:
            yield b"".join([*parts, body])
            parts = None


def _last_history_step(data: bytes) -> int | None:
    """The highest history step of a transaction log (-1: none), scanned back from its last block; None when
    ``data`` is no transaction log this reader knows (another format: the caller keeps its own record)."""
    from google.protobuf.message import DecodeError
    from wandb.proto import wandb_internal_pb2

    if FILE_HEADER.startswith(data):  # empty or cut in its header: a part killed as wandb-core began it
        return -1
    if not data.startswith(FILE_HEADER):
        return None
    for start in range((len(data) - 1) // BLOCK * BLOCK, -1, -BLOCK):
        steps = []
        for body in _records(data, start, start + BLOCK):
            record = wandb_internal_pb2.Record()
            try:
                record.ParseFromString(body)
            except DecodeError:
                break
            if record.HasField("history"):
                steps.append(record.history.step.num)
        if steps:
            return max(steps)
    return -1


def held_step(run_dir: str | Path, run_id: str) -> int | None:
    """The last step W&B holds of run ``run_id`` in ``RUN_DIR/wandb`` (every part's ``.wandb`` file: a resumed
    run's part writes its own), -1 for none; None where no file could be read as a transaction log."""
    files = {p.resolve() for p in (Path(run_dir) / "wandb").glob(f"*/run-{run_id}.wandb") if p.is_file()}
    found = []
    for path in files:
        try:
            step = _last_history_step(path.read_bytes())
        except (OSError, ImportError):
            return None
        if step is None:
            return None
        found.append(step)
    return max(found) if found else None
