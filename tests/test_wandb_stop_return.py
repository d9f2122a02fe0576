"""W&B's episode return across a stop between two logged iterations (``log_every`` > 1) and its resume: the record the
stop made sends nothing (its step is no point of the uninterrupted run), and its last episode goes with the next
logged record where that has no episode of its own, as the uninterrupted run's record there has it."""
from __future__ import annotations

import sys
import types

import pyarrow.parquet as pq
import pytest

import canter
from canter.errors import CanterError
from canter.logging.wandb import WandbLogger

COMMON = dict(n_envs=1, n_steps=8, max_steps=80, eval_every=0, eval_episodes=1, log_every=5, target_reward=None,
              seed=1, wandb=True, tensorboard=False)


def _fake_wandb(monkeypatch, logged: list) -> None:
    """A wandb module whose runs append (step, episode return or None) to ``logged`` (offline: starting_step 0)."""
    def init(**kw):
        return types.SimpleNamespace(log=lambda data, step: logged.append((step, data.get("charts/episode_return"))),
                                     starting_step=0, finish=lambda exit_code=None: None)

    monkeypatch.setitem(sys.modules, "wandb", types.SimpleNamespace(init=init, Settings=lambda **kw: None))


def test_a_stop_records_last_episode_is_logged_with_the_next_record_of_the_resumed_run(tmp_path, monkeypatch):
    """Stopped at step 24 (iteration 3; an episode ended at 22, none from 25 to 40): the uninterrupted run's record
    at 40 has the return of the episode that ended at 22; the resumed run's, which has no episode, sent none."""
    logged: list = []
    _fake_wandb(monkeypatch, logged)
    canter.train("a2c", "CartPole-v1", run_dir=tmp_path / "whole", **COMMON)
    whole = list(logged)
    ends = pq.read_table(tmp_path / "whole" / "history.parquet").column("step").to_pylist()
    assert any(e <= 24 for e in ends) and not any(24 < e <= 40 for e in ends)  # (the case this test is about)
    logged.clear()

    def stop_at_24(trainer, losses):
        if trainer.step >= 24 and trainer.resume_exact is None and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    canter.train("a2c", "CartPole-v1", run_dir=tmp_path / "part", hooks={"after_update": stop_at_24}, **COMMON)
    assert logged == [] and (tmp_path / "part" / "wandb" / WandbLogger.PENDING_FILE).exists()
    canter.resume(tmp_path / "part")
    assert logged == whole and whole[0][1] is not None
    assert not (tmp_path / "part" / "wandb" / WandbLogger.PENDING_FILE).exists()  # sent: not again


def _logger(tmp_path, monkeypatch, logged: list, resumed_step=None, logged_step=None) -> WandbLogger:
    _fake_wandb(monkeypatch, logged)
    (tmp_path / "wandb").mkdir(exist_ok=True)
    if logged_step is not None:
        (tmp_path / "wandb" / WandbLogger.STEP_FILE).write_text(f"{logged_step:020d}\n")
    lg = WandbLogger(tmp_path)
    lg.start(types.SimpleNamespace(resumed_step=resumed_step))
    return lg


def test_a_pending_return_the_w_and_b_run_has_had_is_not_sent_again(tmp_path, monkeypatch):
    """A kill after the record that sent it, before the file went: that record's step is logged, the file is stale."""
    logged: list = []
    (tmp_path / "wandb").mkdir()
    (tmp_path / "wandb" / WandbLogger.PENDING_FILE).write_text(f"{24:020d} 22.0\n")
    lg = _logger(tmp_path, monkeypatch, logged, resumed_step=48, logged_step=40)
    assert lg.pending is None
    lg = _logger(tmp_path, monkeypatch, logged, resumed_step=24, logged_step=40)  # resumed from the stop's checkpoint
    assert lg.pending is None  # (above, the resumed step alone refused it: this is the logged step's own check)
    lg = _logger(tmp_path, monkeypatch, logged, resumed_step=32, logged_step=0)  # a part without --wandb went on
    assert lg.pending is None
    lg2 = _logger(tmp_path, monkeypatch, logged, resumed_step=24, logged_step=0)
    assert lg2.pending == (24, 22.0)


def test_a_damaged_pending_file_is_named(tmp_path, monkeypatch):
    (tmp_path / "wandb").mkdir()
    (tmp_path / "wandb" / WandbLogger.PENDING_FILE).write_text("24 twenty\n")
    with pytest.raises(CanterError, match="canter-pending-return should hold a step"):
        _logger(tmp_path, monkeypatch, [], resumed_step=24)


def test_a_second_stop_without_an_episode_keeps_the_pending_return_for_its_resume(tmp_path, monkeypatch):
    """Stopped at 24 (an episode), resumed, stopped at 32 with no episode since: the resume from 32 still sends it."""
    from canter.trainers.records import EpisodeInfo, TrainRecord

    logged: list = []
    lg = _logger(tmp_path, monkeypatch, logged, resumed_step=None)
    lg.log(TrainRecord(24, 3, 0.0, 0.0, [EpisodeInfo(22, 0.0, 22.0, 22, 22.0)], stop_only=True))
    lg = _logger(tmp_path, monkeypatch, logged, resumed_step=24)
    lg.log(TrainRecord(32, 4, 0.0, 0.0, [], stop_only=True))
    lg = _logger(tmp_path, monkeypatch, logged, resumed_step=32)
    lg.log(TrainRecord(40, 5, 0.0, 0.0, []))
    assert logged == [(40, 22.0)]
