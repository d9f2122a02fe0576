"""A frame-stack or hindsight buffer file (``trainer.buffer.save(path)`` / ``load(path)``) whose own entries are
missing or damaged: a one-line :class:`CanterError` naming the file, and the buffer loaded into keeps what it held,
as for a plain buffer (test_replay_file_errors.py); a file without ``head_stack`` was a KeyError traceback after the
buffer's contents were replaced."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest

from canter.data.framestack import FrameStackReplay
from canter.errors import CanterError
from test_her import _buffer as _her_buffer
from test_her import _fill


def _stack_buffer(rows: int) -> FrameStackReplay:
    buf = FrameStackReplay(16, (4, 5, 5), (), np.uint8, np.int64)
    for i in range(rows):
        obs = np.full((1, 4, 5, 5), i, np.uint8)
        buf.add(obs, np.zeros(1, np.int64), np.ones(1, np.float32), obs + 1, np.zeros(1, bool))
    return buf


def _damaged(path, drop: str = "", **meta_changes) -> bytes:
    """The .npz at ``path`` without the array or JSON entry ``drop``, its JSON entries changed by ``meta_changes``."""
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays.pop("__meta__")))
    arrays.pop(drop, None), meta.pop(drop, None)
    meta.update(meta_changes)
    out = io.BytesIO()
    np.savez(out, **arrays, __meta__=np.array(json.dumps(meta)))
    return out.getvalue()


def _refused_and_kept(buf, bad) -> None:
    before = {k: getattr(buf, k).copy() for k in buf.ARRAYS}
    pos, count = buf.pos, buf.count
    with pytest.raises(CanterError) as info:
        buf.load(bad)
    assert str(bad) in str(info.value) and "\n" not in str(info.value)
    assert all(np.array_equal(getattr(buf, k), v) for k, v in before.items())
    assert (buf.pos, buf.count) == (pos, count)


@pytest.mark.parametrize("damage", [dict(drop="head_stack"), dict(head_stack=None), dict(frame_channels="x")])
def test_a_damaged_frame_stack_buffer_file_is_refused_and_the_buffer_kept(tmp_path, damage):
    path = _stack_buffer(5).save(tmp_path / "buf.npz")
    if damage.get("head_stack", 0) is None:  # an array of another shape in its place
        with np.load(path) as data:
            arrays = {k: data[k] for k in data.files}
        arrays["head_stack"] = arrays["head_stack"][:, :2]
        out = io.BytesIO()
        np.savez(out, **arrays)
        raw = out.getvalue()
    else:
        raw = _damaged(path, **damage)
    (tmp_path / "bad.npz").write_bytes(raw)
    _refused_and_kept(_stack_buffer(3), tmp_path / "bad.npz")


@pytest.mark.parametrize("damage", [dict(drop="her_open"), dict(her_last=[1, 2, 3])])
def test_a_damaged_hindsight_buffer_file_is_refused_and_the_buffer_kept(tmp_path, damage):
    saved = _her_buffer()
    _fill(saved, [[3]], 7)
    path = saved.save(tmp_path / "her.npz")
    (tmp_path / "bad.npz").write_bytes(_damaged(path, **damage))
    buf = _her_buffer()
    _fill(buf, [[2]], 4)
    _refused_and_kept(buf, tmp_path / "bad.npz")


def test_frame_stack_and_hindsight_files_still_load(tmp_path):
    _stack_buffer(5).save(tmp_path / "buf.npz")
    buf = _stack_buffer(0)
    buf.load(tmp_path / "buf.npz")
    assert buf.count == 5
    saved = _her_buffer()
    _fill(saved, [[3]], 7)
    saved.save(tmp_path / "her.npz")
    her = _her_buffer()
    her.load(tmp_path / "her.npz")
    assert her.count == saved.count and np.array_equal(her._open, saved._open)


def _prioritized_buffer(rows: int):
    from canter.data.prioritized import PrioritizedReplayBuffer

    buf = PrioritizedReplayBuffer(16, (3,), (), np.float32, np.int64)
    for i in range(rows):
        buf.add(np.full((1, 3), i, np.float32), np.zeros(1, np.int64), np.ones(1, np.float32),
                np.full((1, 3), i + 1, np.float32), np.zeros(1, bool))
    return buf


@pytest.mark.parametrize("damage", ["short_priorities", "max_priority_text", "beta_text"])
def test_a_damaged_prioritized_buffer_file_is_refused_and_the_buffer_kept(tmp_path, damage):
    """A prioritized buffer's priorities of another length or a max_priority/beta that is not a number were a
    ValueError traceback after the buffer's arrays were replaced (its contents lost)."""
    path = _prioritized_buffer(5).save(tmp_path / "per.npz")
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays.pop("__meta__")))
    if damage == "short_priorities":
        arrays["priorities"] = arrays["priorities"][:3]
    else:
        meta[damage.removesuffix("_text")] = "x"
    (tmp_path / "bad.npz").write_bytes(_npz(arrays, meta))
    _refused_and_kept(_prioritized_buffer(3), tmp_path / "bad.npz")


def _npz(arrays: dict, meta: dict) -> bytes:
    out = io.BytesIO()
    np.savez(out, **arrays, __meta__=np.array(json.dumps(meta)))
    return out.getvalue()


def test_a_prioritized_buffer_file_still_loads(tmp_path):
    saved = _prioritized_buffer(5)
    saved.update_priorities(np.array([1, 2]), np.array([3.0, 0.5]))
    saved.save(tmp_path / "per.npz")
    buf = _prioritized_buffer(0)
    buf.load(tmp_path / "per.npz")
    assert buf.count == 5 and buf.max_priority == saved.max_priority
    assert np.array_equal(buf.sums.leaves, saved.sums.leaves)


def test_a_hindsight_buffer_file_with_info_arrays_of_another_length_is_refused_and_the_buffer_kept(tmp_path):
    """An info array (her_info_<i>) shorter than the saved rows, or its reported flags of another shape, was a
    broadcast ValueError traceback after the buffer's arrays were replaced (76e4b7d0 checked only that they were
    there)."""
    saved = _her_buffer()
    _fill(saved, [[3]], 7)
    path = saved.save(tmp_path / "her.npz")
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays.pop("__meta__")))
    meta["her_info_keys"] = ["x"]
    arrays["her_info_0"], arrays["her_info_set_0"] = np.zeros(2), np.zeros(2, bool)
    (tmp_path / "bad.npz").write_bytes(_npz(arrays, meta))
    buf = _her_buffer()
    _fill(buf, [[2]], 4)
    _refused_and_kept(buf, tmp_path / "bad.npz")
    rows = (len(arrays["obs"]), 1)
    arrays["her_info_0"], arrays["her_info_set_0"] = np.zeros((*rows, 2)), np.zeros(rows[0], bool)  # set: 1-d
    (tmp_path / "bad.npz").write_bytes(_npz(arrays, meta))
    _refused_and_kept(buf, tmp_path / "bad.npz")
    arrays["her_info_0"], arrays["her_info_set_0"] = np.zeros((*rows, 2)), np.ones(rows, bool)
    (tmp_path / "good.npz").write_bytes(_npz(arrays, meta))
    buf.load(tmp_path / "good.npz")  # of the saved rows' length: loads
    assert buf.count == saved.count and list(buf.infos) == ["x"]
