"""Same seed, same learning curve; contract tests over every registered algorithm."""
import atexit
import json
import shutil
import tempfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.cli import main
from canter.data.dataset import collect
from canter.envs import make_vec_env
from canter.registry import lookup, names

SMALL = {
    "ppo": dict(n_steps=64, batch_size=32, n_epochs=2),
    "dqn": dict(learning_starts=64, train_freq=4, gradient_steps=2, net_arch=[32], exploration_fraction=0.5),
    "a2c": dict(n_steps=8),
    "reinforce": dict(n_steps=64),
    "trpo": dict(n_steps=128, batch_size=64, n_critic_updates=2),
    "npg": dict(n_steps=128, batch_size=64, n_critic_updates=2),
    "acer": dict(n_steps=10, replay_start=100, net_arch=[32]),
}
_OFF = dict(learning_starts=64, train_freq=4, gradient_steps=1, net_arch=[32], batch_size=32)
SMALL.update({a: _OFF for a in ("sac", "td3", "ddpg", "sac_discrete")})
SMALL["tqc"] = {**_OFF, "n_quantiles": 5}
SMALL.update({a: {**SMALL["dqn"], "n_quantiles": 8} for a in ("qrdqn", "rainbow", "iqn")})
SMALL["c51"] = {**SMALL["dqn"], "n_atoms": 11}
SMALL.update({a: dict(gradient_steps=50, net_arch=[32], batch_size=32) for a in ("bc", "td3bc")})
SMALL["mappo"] = SMALL["ppo"]
SMALL["qmix"] = dict(learning_starts=64, train_freq=4, gradient_steps=1, batch_size=32, target_update_interval=100)
SMALL["cql"] = dict(gradient_steps=50, net_arch=[32], batch_size=32, target_update_interval=20)
_DATASETS = Path(tempfile.mkdtemp(prefix="canter-test-datasets-"))
atexit.register(shutil.rmtree, _DATASETS, ignore_errors=True)


def offline_kwargs(algo: str, env_id: str) -> dict:
    """``{"dataset": path}`` for an offline algorithm: 1,000 random-policy transitions of ``env_id``
    (written once per test session); ``{}`` for the others."""
    if lookup("algorithm", algo).family != "offline":
        return {}
    path = _DATASETS / env_id
    if not path.with_name(env_id + ".json").exists():
        collect(env_id, 1000, None, seed=0).save(path)
    return {"dataset": str(path)}


def _env_for(algo: str) -> str:
    cls = lookup("algorithm", algo)
    if cls.multiagent_only:  # QMIX (every agent of a copy acting at once), MAPPO (a centralised critic)
        return "pettingzoo:tests.match_agents"
    return "CartPole-v1" if gym.spaces.Discrete in cls.action_spaces else "Pendulum-v1"


def spaces_for(algo: str) -> tuple[gym.Space, gym.Space]:
    """The observation and action spaces ``algo`` sees on :func:`_env_for`'s env."""
    cls = lookup("algorithm", algo)
    env = make_vec_env(_env_for(algo), 1, policies="joint" if getattr(cls, "joint_agents", False) else "shared",
                       central_state=getattr(cls, "central_critic", False))
    env.close()
    return env.single_observation_space, env.single_action_space


def _curve(algo: str, seed: int) -> tuple[list, list]:
    env_id = _env_for(algo)
    trainer = canter.make_trainer(algo, env_id, seed=seed, max_steps=1500, n_envs=2, eval_every=500,
                                  eval_episodes=2, **SMALL.get(algo, {}), **offline_kwargs(algo, env_id))
    episodes, losses = [], []
    for rec in trainer():
        episodes += [(e.step, e.episode_return) for e in rec.episodes]
        losses.append(sorted(rec.losses.items()))
        if rec.evaluation:
            episodes.append(("eval", rec.evaluation.returns))
    return episodes, losses


@pytest.mark.parametrize("algo", names("algorithm"))
def test_same_seed_same_learning_curve(algo):
    a, b = _curve(algo, 7), _curve(algo, 7)
    assert a == b
    offline = lookup("algorithm", algo).family == "offline"  # no training episodes: the 3 evaluations
    assert len(a[0]) == 3 if offline else len(a[0]) > 5
    c = _curve(algo, 8)
    assert c != a


@pytest.mark.parametrize("algo", names("algorithm"))
def test_train_help_lists_hyperparameters(algo, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", algo, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    cfg = lookup("algorithm", algo).Config
    for name in cfg.__dataclass_fields__:
        assert f"--{name.replace('_', '-')}" in out


def test_vec_env_marks_autoreset_steps_and_keeps_final_observation():
    env = make_vec_env("CartPole-v1", 2, "sync", {"max_episode_steps": 5})
    assert env.reset(seed=0).shape == (2, 4)
    for t in range(5):
        step = env.step(np.zeros(2, dtype=np.int64))
        assert step.valid.all()
    assert step.truncated.all() and not step.terminated.any()  # 5 pushes to the left do not topple the pole
    assert env.finished_lengths.tolist() == [5, 5]
    final = step.obs.copy()
    nxt = env.step(np.zeros(2, dtype=np.int64))
    assert not nxt.valid.any() and (nxt.reward == 0).all()
    assert not np.allclose(final, nxt.obs)  # the reset observation differs from the final one
    assert env.step(np.zeros(2, dtype=np.int64)).valid.all()
    env.close()


def test_native_and_sync_vectorisation_agree_on_episode_bookkeeping():
    native = make_vec_env("CartPole-v1", 3, "native")
    sync = make_vec_env("CartPole-v1", 3, "sync")
    assert type(native.env).__name__ == "CartPoleVectorEnv"
    for env in (native, sync):
        env.reset(seed=1)
        lengths = []
        for _ in range(200):
            env.step(np.ones(3, dtype=np.int64))
            lengths += env.finished_lengths.tolist()
        assert lengths and all(8 <= n <= 30 for n in lengths)  # always pushing right ends episodes fast
        env.close()


@pytest.mark.parametrize("algo", names("algorithm"))
def test_interrupted_then_resumed_run_equals_the_uninterrupted_one(algo, tmp_path):
    """Contract: a run stopped at a checkpoint and resumed ends with the same weights, optimizer
    state and statistics as one that never stopped (replay buffers, generators and schedules saved)."""
    from canter.checkpoint import flatten_state

    env_id = _env_for(algo)
    common = dict(env=env_id, seed=5, n_envs=2, eval_every=300, eval_episodes=1, quiet=True,
                  **SMALL.get(algo, {}), **offline_kwargs(algo, env_id))
    whole = canter.train(algo, max_steps=800, run_dir=tmp_path / "whole", **common)

    def interrupt(trainer, losses):  # as Ctrl-C would: the run saves its resume state and stops
        if trainer.step >= 400 and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    canter.train(algo, max_steps=800, run_dir=tmp_path / "part", hooks={"after_update": interrupt}, **common)
    assert json.loads((tmp_path / "part" / "summary.json").read_text())["steps"] < 800
    resumed = canter.resume(tmp_path / "part")
    skeleton_a, a = flatten_state(whole.state_dict())
    skeleton_b, b = flatten_state(resumed.state_dict())
    assert skeleton_a == skeleton_b and a.keys() == b.keys()
    different = [k for k in a if not torch.equal(a[k], b[k])]
    assert not different, f"{algo}: {different[:5]}"
    summary = json.loads((tmp_path / "part" / "summary.json").read_text())
    assert summary["resume_exact"] is True and summary["steps"] == whole_steps(tmp_path / "whole")


def whole_steps(run_dir: Path) -> int:
    """The steps an uninterrupted run's summary records."""
    return json.loads((run_dir / "summary.json").read_text())["steps"]


def test_the_run_seed_reaches_the_algorithms_own_generator():
    """Exploration draws come from the algorithm's generator: with the same weights and observations,
    seeds 3 and 4 must sample different actions (and seed 3 twice the same ones)."""
    obs = np.random.default_rng(0).normal(size=(256, 4)).astype(np.float32)

    def samples(seed, weights=None):
        trainer = canter.make_trainer("ppo", "CartPole-v1", seed=seed, max_steps=64, n_envs=1)
        algo = trainer.algorithm
        if weights is not None:
            algo.load_state_dict(weights, weights_only=True)
        actions = trainer.agent.sample(obs)[0]
        trainer.close()
        return actions, algo.state_dict()

    first, weights = samples(3)
    again, _ = samples(3, weights)
    other, _ = samples(4, weights)
    np.testing.assert_array_equal(first, again)
    assert (first != other).mean() > 0.2


def test_canters_own_generators_do_not_reuse_an_env_copys_stream():
    """Replay sampling drew from default_rng(seed), the warm-up actions from default_rng(seed + 1): the
    very streams gymnasium gives env copies 0 and 1 (reset with seed + i), so a DQN run's replay indices
    and its first env's initial states came from the same bits."""
    trainer = canter.make_trainer("dqn", "CartPole-v1", seed=5, max_steps=64, n_envs=2, tensorboard=False)
    try:
        trainer.setup()  # what the training loop does first: builds the buffer and the warm-up generator
        env_streams = [np.random.default_rng(5 + i).random(4) for i in range(4)]
        for rng in (trainer.buffer.rng, trainer.rng):
            draws = rng.random(4)
            assert not any(np.array_equal(draws, s) for s in env_streams)
    finally:
        trainer.close()
