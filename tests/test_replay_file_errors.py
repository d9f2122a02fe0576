"""A replay buffer file (``trainer.buffer.save(path)`` / ``load(path)``) that is damaged or not one: a one-line
:class:`CanterError` naming the file, and the buffer loaded into keeps what it held."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest

from canter.data.replay import ReplayBuffer
from canter.errors import CanterError


def _buffer(rows: int = 0) -> ReplayBuffer:
    buf = ReplayBuffer(16, (3,), (), np.float32, np.int64)
    for i in range(rows):
        buf.add(np.full((1, 3), i, np.float32), np.zeros(1, np.int64), np.ones(1, np.float32),
                np.full((1, 3), i + 1, np.float32), np.zeros(1, bool))
    return buf


def _rewritten(path, **meta_changes) -> bytes:
    """The bytes of the .npz at ``path`` with its JSON scalars changed (a key given None is removed)."""
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays.pop("__meta__")))
    for k, v in meta_changes.items():
        meta.pop(k) if v is None else meta.__setitem__(k, v)
    out = io.BytesIO()
    np.savez(out, **arrays, __meta__=np.array(json.dumps(meta)))
    return out.getvalue()


@pytest.mark.parametrize("damage", ["truncated", "empty", "not_npz_zip", "meta_list", "pos_text", "no_rng",
                                    "bad_rng", "pos_past_end", "full_text", "started_number", "fresh_text"])
def test_a_damaged_buffer_file_is_one_line_naming_it_and_the_buffer_is_kept(tmp_path, damage):
    path = tmp_path / "buf.npz"
    _buffer(5).save(path)
    raw = path.read_bytes()
    data = {"truncated": lambda: raw[:len(raw) // 2], "empty": lambda: b"",
            "not_npz_zip": lambda: b"PK\x03\x04" + b"\0" * 40,
            "meta_list": lambda: _meta_list(path),
            "pos_text": lambda: _rewritten(path, pos="x"), "no_rng": lambda: _rewritten(path, rng=None),
            "bad_rng": lambda: _rewritten(path, rng={"bit_generator": "PCG64", "state": 3}),
            "pos_past_end": lambda: _rewritten(path, pos=99),
            "full_text": lambda: _rewritten(path, full="false"),  # loaded as full (bool('false'))
            "started_number": lambda: _rewritten(path, started=0),
            "fresh_text": lambda: _rewritten(path, fresh="false")}[damage]()  # a new-episode boundary pending
    bad = tmp_path / "bad.npz"
    bad.write_bytes(data)
    buf = _buffer(3)
    before = {k: getattr(buf, k).copy() for k in buf.ARRAYS}
    pos, count = buf.pos, buf.count
    with pytest.raises(CanterError) as info:
        buf.load(bad)
    message = str(info.value)
    assert str(bad) in message and "\n" not in message
    assert all(np.array_equal(getattr(buf, k), v) for k, v in before.items())  # nothing of the buffer lost
    assert (buf.pos, buf.count) == (pos, count) == (3, 3)


def _meta_list(path) -> bytes:
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files if k != "__meta__"}
    out = io.BytesIO()
    np.savez(out, **arrays, __meta__=np.array("[1, 2]"))
    return out.getvalue()


def test_a_saved_buffer_still_loads(tmp_path):
    _buffer(5).save(tmp_path / "buf.npz")
    buf = _buffer(0)
    buf.load(tmp_path / "buf.npz")
    assert buf.count == 5 and buf.obs[4, 0, 0] == 4
