"""A resumed run logs to W&B the points its killed part logged but W&B never stored: canter-logged-step is written
before each point, while wandb-core writes its offline .wandb file in 32 KiB blocks, so a kill -9 left the file
short of the logged step (PPO CartPole, 12 s: W&B held steps to 58,368, canter-logged-step said 70,656) and the
resumed run skipped 58,880 to 70,656 for good. Offline, it now logs from the last step W&B's own files hold."""
from __future__ import annotations

import struct
import types
import zlib

import pytest

pytest.importorskip("wandb")

from wandb.proto import wandb_internal_pb2  # noqa: E402

from canter.logging.wandb import WandbLogger  # noqa: E402
from canter.logging.wandb_store import BLOCK, FILE_HEADER, HEADER, held_step  # noqa: E402


def _chunk(kind: int, body: bytes) -> bytes:
    return struct.pack("<IHB", zlib.crc32(body, zlib.crc32(bytes([kind]))), len(body), kind) + body


def _log(records: list[bytes]) -> bytes:
    """A transaction log in wandb-core's format: records split across 32 KiB blocks, zero padding at a block's end."""
    out = bytearray(FILE_HEADER)
    for body in records:
        first = True
        while True:
            left = BLOCK - len(out) % BLOCK
            if left < HEADER:
                out += bytes(left)
                continue
            part, body = body[:left - HEADER], body[left - HEADER:]
            out += _chunk((1 if first else 4) if not body else (2 if first else 3), part)
            first = False
            if not body:
                break
    return bytes(out)


def _history(step: int, pad: int = 0) -> bytes:
    record = wandb_internal_pb2.Record()
    record.history.step.num = step
    item = record.history.item.add()
    item.key, item.value_json = "charts/rolling_return", "1.0" + " " * pad
    return record.SerializeToString()


def _summary() -> bytes:
    record = wandb_internal_pb2.Record()
    record.summary.update.add(key="x", value_json="1")
    return record.SerializeToString()


def test_the_last_step_of_a_log_cut_by_a_kill_is_read_back_to_its_last_whole_record(tmp_path):
    records = [r for s in range(512, 512 * 200, 512) for r in (_history(s, pad=40 if s != 51200 else 70_000),
                                                              _summary())]
    data = _log(records)
    folder = tmp_path / "wandb" / "offline-run-1-abcd1234"
    folder.mkdir(parents=True)
    path = folder / "run-abcd1234.wandb"
    path.write_bytes(data)
    assert held_step(tmp_path, "abcd1234") == 512 * 199
    cut = data.index(_history(512 * 150, pad=40)) + 20  # inside step 76,800's record: the tail a kill lost
    path.write_bytes(data[:cut])
    assert held_step(tmp_path, "abcd1234") == 512 * 149
    path.write_bytes(data[:data.index(_history(51200, pad=70_000)[:30]) + 40_000])  # a record over 3 blocks, cut
    assert held_step(tmp_path, "abcd1234") == 51200 - 512
    path.write_bytes(b"not a log")
    assert held_step(tmp_path, "abcd1234") is None  # unknown format: the logger keeps canter-logged-step
    assert held_step(tmp_path, "other") is None


def _killed_offline_run(tmp_path, monkeypatch):
    """A fake offline W&B (nothing sent) and a run directory whose part was killed: canter logged to step 70,656, and
    W&B's file holds steps 512 to 58,368. Returns the W&B run's folder."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    fake = types.SimpleNamespace(log=lambda data, step: None, starting_step=0, finish=lambda exit_code=None: None)
    monkeypatch.setitem(__import__("sys").modules, "wandb",
                        types.SimpleNamespace(init=lambda **kw: fake, Settings=lambda **kw: None))
    wandb_dir = tmp_path / "wandb" / "offline-run-20261128_020420-abcd1234"
    wandb_dir.mkdir(parents=True)
    (tmp_path / "wandb" / "canter-run-id").write_text("abcd1234\n")
    (tmp_path / "wandb" / "canter-logged-step").write_text(f"{70656:020d}\n")
    (wandb_dir / "run-abcd1234.wandb").write_bytes(_log([_history(s) for s in range(512, 58369, 512)]))
    return wandb_dir


def test_a_resumed_offline_run_logs_from_the_last_step_wandb_holds(tmp_path, monkeypatch):
    wandb_dir = _killed_offline_run(tmp_path, monkeypatch)
    logger = WandbLogger(tmp_path)
    logger.start(types.SimpleNamespace())
    assert logger.next_step == 58369  # was 70,657: steps 58,880 to 70,656 never reached W&B
    (wandb_dir / "run-abcd1234.wandb").write_bytes(b"another format")
    logger = WandbLogger(tmp_path)
    logger.start(types.SimpleNamespace())
    assert logger.next_step == 70657


@pytest.mark.slow
def test_the_real_wandbs_log_cut_at_a_block_is_read(tmp_path, monkeypatch):
    """With wandb itself (offline): its .wandb file, cut to whole blocks as a kill -9 leaves it, is read back to its
    last whole history record, and a resumed logger starts after it."""
    from canter.trainers.base import TrainRecord

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    logger = WandbLogger(tmp_path, project="held-step")
    logger.start(types.SimpleNamespace())
    for k in range(1, 401):
        logger.log(TrainRecord(step=512 * k, iteration=k, wall_time=k, steps_per_second=1000.0, rolling_return=k,
                               losses={"policy_loss": 0.5, "value_loss": 1.5, "entropy": 0.6}))
    logger.close()
    import wandb

    wandb.teardown()  # run.finish returns before wandb-core has written its last blocks (as a process exit waits for)
    run_id = (tmp_path / "wandb" / "canter-run-id").read_text().strip()
    assert held_step(tmp_path, run_id) == 512 * 400
    (path,) = (tmp_path / "wandb").glob(f"offline-run-*/run-{run_id}.wandb")
    data = path.read_bytes()
    assert len(data) > 2 * BLOCK
    path.write_bytes(data[:len(data) // BLOCK * BLOCK])
    (tmp_path / "wandb" / WandbLogger.FINISHED_FILE).unlink()  # as a kill -9 leaves the run: never finished
    held = held_step(tmp_path, run_id)
    assert 0 < held < 512 * 400 and held % 512 == 0
    logger = WandbLogger(tmp_path, project="held-step")
    logger.start(types.SimpleNamespace())
    assert logger.next_step == held + 1
    logger.close()


def test_a_log_killed_before_its_header_holds_nothing(tmp_path):
    folder = tmp_path / "wandb" / "offline-run-2-abcd1234"
    folder.mkdir(parents=True)
    (folder / "run-abcd1234.wandb").write_bytes(FILE_HEADER[:3])
    assert held_step(tmp_path, "abcd1234") == -1


def test_a_run_resumed_in_its_process_after_a_finish_does_not_log_again_what_wandb_is_still_writing(tmp_path,
                                                                                                      monkeypatch):
    """wandb 0.31's run.finish returns before wandb-core has written its .wandb file's last blocks (a process exit
    waits for them): a part resumed in the same process read the file short (186,368 of 204,800) and logged the
    difference again, steps W&B then has twice. After a finish canter-logged-step holds; after a kill the files."""
    from canter.trainers.base import TrainRecord

    monkeypatch.setenv("WANDB_MODE", "offline")
    fake = types.SimpleNamespace(log=lambda data, step: None, starting_step=0, finish=lambda exit_code=None: None)
    monkeypatch.setitem(__import__("sys").modules, "wandb",
                        types.SimpleNamespace(init=lambda **kw: fake, Settings=lambda **kw: None))
    logger = WandbLogger(tmp_path)
    logger.start(types.SimpleNamespace())
    for k in range(1, 401):
        logger.log(TrainRecord(step=512 * k, iteration=k, wall_time=k, steps_per_second=1.0, rolling_return=k))
    logger.close()
    wandb_dir = tmp_path / "wandb" / "offline-run-20261128_020420-abcd1234"
    wandb_dir.mkdir(parents=True)
    run_id = (tmp_path / "wandb" / "canter-run-id").read_text().strip()
    (wandb_dir / f"run-{run_id}.wandb").write_bytes(_log([_history(s) for s in range(512, 186369, 512)]))
    logger = WandbLogger(tmp_path)
    logger.start(types.SimpleNamespace())
    assert logger.next_step == 204801  # was 186,369
    logger = WandbLogger(tmp_path)  # that part killed (no finish): what W&B's files hold
    logger.start(types.SimpleNamespace())
    assert logger.next_step == 186369


def test_a_finished_part_that_logged_nothing_keeps_what_wandb_holds(tmp_path, monkeypatch):
    """A part resumed after a kill (W&B's files hold 58,368 of the 70,656 logged) and finished before its first record:
    its finish vouches only for what W&B held, so the next part still logs from 58,369."""
    _killed_offline_run(tmp_path, monkeypatch)
    for _ in range(2):
        logger = WandbLogger(tmp_path)
        logger.start(types.SimpleNamespace())
        assert logger.next_step == 58369
        logger.close()
