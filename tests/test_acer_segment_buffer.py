"""ACER's replay holds whole segments (n_steps x n_envs transitions) and its buffer_size is rounded down to them, but a
buffer_size below one segment held a whole segment all the same: ``buffer_size=5 replay_start=100`` held 160 transitions
and replayed. Such a buffer is refused in one line naming the minimum, where the run replays."""
from __future__ import annotations

import pytest

import canter
from canter.errors import CanterError
from support import assert_one_line_error, run_cli, snapshot


def test_a_buffer_below_one_segment_is_refused_in_one_line_and_writes_nothing(tmp_path, capsys):
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, "train", "acer", "--env", "CartPole-v1", "--set", "buffer_size=5", "--set",
                           "replay_start=100", "--run-dir", str(tmp_path / "run"), "--quiet")
    assert_one_line_error(code, err, "hparams.buffer_size (5) is below one segment of n_steps 20 x 8 envs = 160 "
                                     "transitions", "set buffer_size to at least 160")
    assert snapshot(tmp_path) == before
    with pytest.raises(CanterError, match=r"below one segment of n_steps 5 x 2 envs = 10 transitions"):
        canter.make_trainer("acer", "CartPole-v1", n_envs=2, n_steps=5, buffer_size=9)


@pytest.mark.parametrize("kwargs", [dict(buffer_size=10), dict(buffer_size=9, replay_ratio=0)])
def test_one_segment_or_no_replay_is_accepted(kwargs):
    trainer = canter.make_trainer("acer", "CartPole-v1", n_envs=2, n_steps=5, replay_start=0, **kwargs)
    try:
        trainer.setup()
        assert trainer.replay.capacity == 1  # one segment of 5 x 2
    finally:
        trainer.close()


def test_several_policies_are_refused_for_that_not_for_the_buffer(tmp_path, capsys):
    """ACER cannot train several policies; with a small buffer_size as well, the buffer check came first and was
    checked against all agent rows together: fixing it only led to the refusal that matters."""
    pytest.importorskip("pettingzoo")
    code, _, err = run_cli(capsys, "train", "acer", "--env", "pettingzoo:tests.match_agents", "--set", "policies=type",
                           "--set", "buffer_size=30", "--max-steps", "200", "--run-dir", str(tmp_path / "run"),
                           "--quiet")
    assert_one_line_error(code, err, "acer cannot train several policies")
