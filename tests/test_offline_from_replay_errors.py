"""``canter collect RUN --from-replay`` on a run without a transition replay buffer says why in one line: an
ACER run keeps a replay of whole rollout segments (it was told 'only off-policy runs do', though ACER replays),
an on-policy run none; either way collecting with the run's policy is the way."""
from __future__ import annotations

import pytest

import canter
from canter.data.dataset import from_replay
from canter.errors import CanterError
from support import assert_one_line_error, run_cli


def test_an_acer_run_is_told_its_replay_holds_segments(tmp_path, capsys):
    run = tmp_path / "acer"
    canter.train("acer", env="CartPole-v1", run_dir=run, seed=0, n_envs=2, max_steps=120, n_steps=20, replay_start=40,
                 buffer_size=100, net_arch=[8], eval_every=0, eval_episodes=1, tensorboard=False, quiet=True)
    with pytest.raises(CanterError, match="acer run, whose replay keeps whole rollout segments"):
        from_replay(run)
    code, _, err = run_cli(capsys, "collect", str(run), "--from-replay", "--out", str(tmp_path / "x"))
    assert_one_line_error(code, err, "whole rollout segments", f"canter collect {run} --out PATH")
    assert "only off-policy runs do" not in err and not (tmp_path / "x.json").exists()


def test_an_on_policy_run_is_told_it_keeps_none(tmp_path):
    run = tmp_path / "ppo"
    canter.train("ppo", env="CartPole-v1", run_dir=run, seed=0, n_envs=1, max_steps=64, n_steps=32, batch_size=32, n_epochs=1,
                 net_arch=[8], eval_every=0, eval_episodes=1, tensorboard=False, quiet=True)
    with pytest.raises(CanterError, match="a ppo run keeps none.*canter collect"):
        from_replay(run)


def test_a_run_with_only_periodic_checkpoints_is_told_last_keeps_the_buffer(tmp_path):
    """No best or last, only step-N (deleted, or a kill between saves): find_checkpoint's advice, 'pass one of its
    periodic checkpoints', sent collect --from-replay to a checkpoint that keeps no buffer, whose error said 'give
    the run directory' again."""
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text("algo: dqn\nenv: CartPole-v1\n")
    (run / "checkpoints" / "step-000000100.safetensors").write_bytes(b"")
    for given in (run, run / "checkpoints"):
        with pytest.raises(CanterError, match=r"has no checkpoints/last, the checkpoint that keeps the replay buffer "
                                              r"\(its best and step-N checkpoints keep none\)$"):
            from_replay(given)


def test_the_algorithm_takes_its_article(tmp_path):
    """An a2c run was told 'a a2c run keeps none'."""
    run = tmp_path / "a2c"
    canter.train("a2c", env="CartPole-v1", run_dir=run, seed=0, n_envs=1, max_steps=40, n_steps=20, net_arch=[8],
                 eval_every=0, eval_episodes=1, tensorboard=False, quiet=True)
    with pytest.raises(CanterError, match="; an a2c run keeps none"):
        from_replay(run)
