"""Training on a GPU (``device: cuda``): every registered algorithm trains there, writes a checkpoint that
loads on the CPU with the same deterministic actions, resumes exactly, and PPO solves CartPole.

The device comes from ``CANTER_TEST_DEVICE`` (default ``cuda``); every test is skipped when that is a CUDA
device and torch finds none, so on a CPU-only machine the default suite skips this file. Run it with
``CANTER_TEST_DEVICE=cpu`` to check the tests themselves (and canter's CPU path) without a GPU.
Together the tests take about 40 s on one GPU (an H200; gymnasium needed; pettingzoo and ale-py tests are
skipped without them).
"""
from __future__ import annotations

import dataclasses
import json
import math
import os

# cuBLAS needs this set before its first call to run deterministically (torch.use_deterministic_algorithms)
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

pytest.importorskip("gymnasium")

import canter  # noqa: E402
from canter.config import RunConfig  # noqa: E402
from canter.registry import lookup, names  # noqa: E402

DEVICE = os.environ.get("CANTER_TEST_DEVICE", "cuda")
pytestmark = pytest.mark.skipif(DEVICE.startswith("cuda") and not torch.cuda.is_available(),
                                reason=f"CANTER_TEST_DEVICE={DEVICE} but torch finds no CUDA GPU")

MATCH = "pettingzoo:tests.match_agents"
#: env (and env_kwargs) per algorithm; offline algorithms train on a small dataset of this env
ENVS: dict[str, tuple[str, dict]] = {
    "sac": ("Pendulum-v1", {}), "td3": ("Pendulum-v1", {}), "ddpg": ("Pendulum-v1", {}), "tqc": ("Pendulum-v1", {}),
    "td3bc": ("Pendulum-v1", {}), "qmix": (MATCH, {"n_agents": 2, "team": True}),
    "mappo": (MATCH, {"n_agents": 2, "team": True}),
}
#: small settings; each algorithm takes those its config (or the run config) has. manual_backward=False: the
#: autograd updates a GPU run takes (the hand-derived ones are CPU-only), also under CANTER_TEST_DEVICE=cpu
TINY = dict(manual_backward=False, n_envs=2, eval_every=0, eval_episodes=1, n_steps=32, batch_size=32, n_epochs=2,
            learning_starts=64, buffer_size=2_000, train_freq=4, gradient_steps=1, net_arch=[32, 32], replay_start=64,
            seed=0, target_reward=None, tensorboard=False)  # the GPU machine need not have google-crc32c
STEPS = {"offline": 20, "on_policy": 256, "on_policy_recurrent": 256, "on_policy_replay": 256, "async": 256,
         "off_policy": 300}


def _algorithms() -> list[str]:
    import canter.algorithms  # noqa: F401 - registers them

    return sorted(names("algorithm"))


def _settings(algo: str, **extra: object) -> dict:
    """:data:`TINY` (plus ``extra``) restricted to the keys ``algo``'s config or the run config has."""
    known = {f.name for f in dataclasses.fields(lookup("algorithm", algo).Config)}
    known |= {f.name for f in dataclasses.fields(RunConfig)}
    return {k: v for k, v in {**TINY, **extra}.items() if k in known}


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Small random-play datasets for the offline algorithms (as tests/test_offline.py makes them)."""
    from canter.data.dataset import collect

    root = tmp_path_factory.mktemp("datasets")
    out = {}
    for env in ("CartPole-v1", "Pendulum-v1"):
        collect(env, 300, None, seed=0).save(root / env)
        out[env] = str(root / env)
    return out


def _observations(env_id: str, env_kwargs: dict, run: RunConfig, n: int = 64) -> np.ndarray:
    """A fixed batch of ``n`` real observations of ``env_id``: a seeded reset, then seeded random steps."""
    from canter.envs import make_vec_env

    env = make_vec_env(env_id, 4, "sync", env_kwargs, policies=run.policies, central_state=run.central_state)
    try:
        rows, obs = [], env.reset(seed=123)
        space = env.single_action_space
        space.seed(7)
        while sum(len(o) for o in rows) < n:
            rows.append(np.array(obs))
            obs = env.step(np.stack([space.sample() for _ in range(env.num_envs)])).obs
        return np.concatenate(rows)[:n]
    finally:
        env.close()


def _on_device(agent: object) -> bool:
    want = torch.device(DEVICE).type
    params = [p for m in agent.algorithm.modules().values() for p in m.parameters()]
    return bool(params) and all(p.device.type == want for p in params)


def _train(algo: str, run_dir: object, datasets: dict[str, str] | None = None, **extra: object) -> tuple:
    """Train ``algo`` briefly on :data:`DEVICE` into ``run_dir``; (agent, every logged loss value)."""
    cls = lookup("algorithm", algo)
    env_id, env_kwargs = ENVS.get(algo, ("CartPole-v1", {}))
    kw = _settings(algo, **{"max_steps": STEPS[cls.family], **extra})
    if cls.family == "offline":
        kw.update(dataset=datasets[env_id])
        kw.pop("n_envs", None)
    else:
        kw.update(env=env_id, env_kwargs=env_kwargs)
    if env_id == MATCH:
        pytest.importorskip("pettingzoo")
    agent, losses = _losses(canter.make_trainer(algo, device=DEVICE, run_dir=run_dir, **kw))
    return agent, losses


def _losses(run: object) -> tuple[object, list[float]]:
    """Run ``run`` (a :class:`canter.run.Run`) to its end; (its agent, every logged loss value)."""
    losses = []
    try:
        for record in run():
            losses += list(record.losses.values())
    finally:
        run.close()
    agent = run.trainer.agent
    agent.run_config = run.trainer.run
    return agent, losses


def _actions(agent: object, obs: np.ndarray) -> np.ndarray:
    if hasattr(agent, "begin_episodes"):  # a recurrent agent: every row from empty memory
        return agent.predict(obs, episode_start=np.ones(len(obs), bool))
    return agent.predict(obs)


@pytest.mark.parametrize("algo", _algorithms())
def test_algorithm_trains_on_the_device_and_its_checkpoint_loads_on_the_cpu(algo, tmp_path, datasets):
    agent, losses = _train(algo, tmp_path / "run", datasets)
    assert losses, f"{algo} logged no losses"
    assert all(math.isfinite(v) for v in losses), f"{algo}: non-finite losses {losses}"
    assert _on_device(agent), f"{algo}'s parameters are not on {DEVICE}"
    assert (tmp_path / "run" / "checkpoints" / "last.safetensors").exists()
    meta = json.loads((tmp_path / "run" / "checkpoints" / "last.json").read_text())
    assert meta["config"]["device"] == str(torch.device(DEVICE)), meta["config"]["device"]

    cpu = canter.load(tmp_path / "run", device="cpu")
    assert all(p.device.type == "cpu" for m in cpu.algorithm.modules().values() for p in m.parameters())
    env_id, env_kwargs = ENVS.get(algo, ("CartPole-v1", {}))
    obs = _observations(env_id, env_kwargs, agent.run_config)
    here, there = _actions(agent, obs), _actions(cpu, obs)
    assert here.shape == there.shape
    if np.issubdtype(here.dtype, np.floating):
        np.testing.assert_allclose(here, there, rtol=1e-4, atol=1e-4)
    else:  # equal, but for near-ties that another device's float arithmetic may break the other way
        same = (here == there).reshape(len(obs), -1).all(1)
        assert same.sum() >= len(obs) - 2, f"{algo}: {int((~same).sum())} of {len(obs)} actions differ"


def test_a_policy_per_agent_type_trains_on_the_device(tmp_path):
    """Several policies (MultiPolicyAgent): each on the device, each checkpointed and loaded on the CPU."""
    pytest.importorskip("pettingzoo")
    run = canter.make_trainer("mappo", env="pettingzoo:tests.mixed_agents", policies="type", device=DEVICE,
                              run_dir=tmp_path / "run", **_settings("mappo", max_steps=256))
    agent, losses = _losses(run)
    assert losses and all(math.isfinite(v) for v in losses)
    assert len(agent.algorithm.modules()) >= 2 and _on_device(agent)
    cpu = canter.load(tmp_path / "run", device="cpu")
    for name, module in agent.algorithm.modules().items():
        for (key, a), b in zip(module.state_dict().items(), cpu.algorithm.modules()[name].state_dict().values()):
            assert b.device.type == "cpu"
            torch.testing.assert_close(a.cpu(), b, msg=f"{name}.{key}")


def test_a_checkpoint_loads_on_its_own_device_by_default(tmp_path):
    _train("ppo", tmp_path / "run")
    agent = canter.load(tmp_path / "run")
    assert _on_device(agent)
    weights_and_optimizer = canter.load(tmp_path / "run", weights_only=False)
    state = weights_and_optimizer.algorithm.optimizer.state_dict()["state"]
    assert state["exp_avg"].device.type == torch.device(DEVICE).type


@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_exact_resume_on_the_device(algo, tmp_path):
    """An interrupted run resumed equals the uninterrupted one (deterministic kernels where torch has them;
    atomics-based GPU kernels may still differ in the last bits, hence the tolerance)."""
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        common = dict(max_steps=768 if algo == "ppo" else 400, checkpoint_every=256)
        whole, _ = _train(algo, tmp_path / "whole", **common)
        half = 384 if algo == "ppo" else 200

        def interrupt(trainer: object, losses: object) -> None:
            if trainer.step >= half and trainer.stop_requested is None:
                trainer.stop_requested = "interrupted"

        env_id, _ = ENVS.get(algo, ("CartPole-v1", {}))
        run = canter.make_trainer(algo, env=env_id, device=DEVICE, run_dir=tmp_path / "part",
                                  hooks={"after_update": interrupt}, **_settings(algo, **common))
        try:
            for _ in run():
                pass
        finally:
            run.close()
        resumed = canter.resume(tmp_path / "part")
    finally:
        torch.use_deterministic_algorithms(False)
    assert _on_device(resumed)
    for name, module in whole.algorithm.modules().items():
        for (key, a), b in zip(module.state_dict().items(), resumed.algorithm.modules()[name].state_dict().values()):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=f"{algo} {name}.{key}")
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in ("whole", "part")]
    assert summaries[1]["resume_exact"] is True and summaries[1]["updates"] == summaries[0]["updates"]


def test_ppo_solves_cartpole_on_the_device_within_its_preset_budget():
    trainer = canter.make_trainer("ppo", "CartPole-v1", seed=1, device=DEVICE)
    try:
        for _ in trainer():
            pass
    finally:
        trainer.close()
    assert trainer.best_eval_return >= 475, f"PPO reached only {trainer.best_eval_return} in {trainer.step} steps"
    assert trainer.step <= 100_000


def test_ppo_with_the_nature_cnn_trains_on_pong(tmp_path):
    pytest.importorskip("ale_py", reason="the 'atari' extra (ale-py) is not installed")
    run = canter.make_trainer("ppo", "ALE/Pong-v5", device=DEVICE, run_dir=tmp_path / "run", seed=0, max_steps=256,
                              n_envs=2, n_steps=64, batch_size=64, n_epochs=1, eval_every=0, eval_episodes=1,
                              tensorboard=False)
    agent, losses = _losses(run)
    assert losses and all(math.isfinite(v) for v in losses)
    assert _on_device(agent)
    assert type(agent.algorithm.model.encoder).__name__ == "NatureCNN"


#: options the tests above leave at their defaults, each taking its own path on the device: observation, reward
#: and value normalisation, value clipping, the hand-derived updates' default (on, and skipped off the CPU),
#: factored and masked actions, recurrent memory, dueling / noisy / n-step / prioritized / quantile Q-learning,
#: gSDE, Ornstein-Uhlenbeck noise, hindsight replay and the divergence guard's restore mode
SHORT = dict(n_envs=2, eval_every=0, eval_episodes=1, seed=0, target_reward=None, tensorboard=False)
ON = dict(SHORT, max_steps=256, n_steps=32, batch_size=32, n_epochs=2, net_arch=[32, 32])
OFF = dict(SHORT, max_steps=300, learning_starts=64, buffer_size=2_000, train_freq=4, gradient_steps=1, batch_size=32,
           net_arch=[32, 32])  # gradient_steps: not the CartPole preset's 128 per phase
OPTIONS: dict[str, tuple[str, str, dict]] = {
    "ppo-normalized": ("ppo", "CartPole-v1", dict(ON, normalize_obs=True, normalize_reward=True, normalize_value=True,
                                                  clip_range_vf=0.2, target_kl=0.05, manual_backward=True)),
    "ppo-box-manual": ("ppo", "Pendulum-v1", dict(ON, normalize_obs=True, manual_backward=True, lr_schedule="linear")),
    "a2c-manual": ("a2c", "CartPole-v1", dict(ON, manual_backward=True, normalize_obs=True)),
    "ppo-multidiscrete": ("ppo", "PickEntries-grid-test", ON),
    "trpo-multibinary": ("trpo", "PickEntries-binary-test", ON),
    "ppo-masked": ("ppo", "masked_env:MaskedPick-v0", ON),
    "ppo-multidiscrete-masked": ("ppo", "masked_env:FactoredPick-v0", ON),
    "trpo-multidiscrete-info-masked": ("trpo", "masked_env:FactoredPickInfo-v0", ON),
    "recurrent-multidiscrete-masked": ("recurrent_ppo", "masked_env:FactoredPickMethod-v0", dict(ON, lstm_hidden=16)),
    "recurrent-box": ("recurrent_ppo", "Pendulum-v1", dict(ON, critic_lstm=True, normalize_obs=True, lstm_hidden=16)),
    "dqn-rainbowish": ("dqn", "CartPole-v1", dict(OFF, dueling=True, double_q=True, n_step=3, prioritized=True,
                                                  normalize_obs=True, normalize_reward=True)),
    "dqn-noisy-phases": ("dqn", "CartPole-v1", dict(OFF, noisy=True, gradient_steps=2)),
    "dqn-manual-phases": ("dqn", "CartPole-v1", dict(OFF, manual_backward=True, gradient_steps=2)),
    "qrdqn-prioritized": ("dqn", "CartPole-v1", dict(OFF, n_quantiles=8, prioritized=True)),
    "dqn-masked": ("dqn", "masked_env:MaskedPick-v0", dict(OFF, gradient_steps=2)),
    "c51-masked": ("c51", "masked_env:MaskedPick-v0", OFF),
    "sac-sde-per": ("sac", "Pendulum-v1", dict(OFF, use_sde=True, sde_sample_freq=4, prioritized=True, n_step=3,
                                               normalize_obs=True, normalize_reward=True)),
    "td3-ou": ("td3", "Pendulum-v1", dict(OFF, action_noise="ou")),
    "sac-her": ("sac", "goal_env:PointGoal-v0", dict(OFF, her_goals=4)),
    "ppo-guard-restore": ("ppo", "CartPole-v1", dict(ON, divergence_guard="restore")),
    "ppo-critic-arch": ("ppo", "CartPole-v1", dict(ON, critic_net_arch=[48, 24])),
    "sac-critic-arch-episodes": ("sac", "Pendulum-v1", dict(OFF, critic_net_arch=[48], train_freq=1, max_steps=1000,
                                                            train_freq_unit="episode", gradient_steps=-1)),
}


def _reset_observations(env_id: str, n: int = 64) -> np.ndarray:
    """``n`` first observations of ``env_id`` (seeded resets: random actions would break its action masks)."""
    from canter.envs import make_vec_env

    env = make_vec_env(env_id, 4, "sync")
    try:
        return np.concatenate([np.array(env.reset(seed=100 + 4 * i)) for i in range(n // 4)])
    finally:
        env.close()


@pytest.mark.parametrize("case", list(OPTIONS))
def test_options_train_on_the_device_and_resume_there(case, tmp_path):
    """Each option's path trains on the device; the run resumes there (its state back on the device) and its
    checkpoint loads on the CPU with the same deterministic actions."""
    import test_factored_actions  # noqa: F401 - registers the PickEntries envs (MultiDiscrete, MultiBinary)

    algo, env_id, kw = OPTIONS[case]
    base = ON if lookup("algorithm", algo).family.startswith("on_policy") else OFF
    known = {f.name for cls in (lookup("algorithm", algo).Config, RunConfig) for f in dataclasses.fields(cls)}
    # the shared settings the algorithm has (manual_backward left at its default: on, taken only on the CPU), then
    # the case's own options and values, unfiltered (a misspelled one is an error)
    kw = {**{k: v for k, v in base.items() if k in known}, **{k: v for k, v in kw.items() if k not in base or base[k] != v}}
    half = kw["max_steps"] // 2

    def interrupt(trainer: object, losses: object) -> None:
        if trainer.step >= half and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    run = canter.make_trainer(algo, env=env_id, device=DEVICE, run_dir=tmp_path / "run", checkpoint_every=half,
                              hooks={"after_update": interrupt}, **kw)
    _, losses = _losses(run)
    resumed, more = _losses(canter.api.resume_trainer(tmp_path / "run"))
    losses += more
    assert _on_device(resumed), f"{case}: parameters not on {DEVICE} after the resume"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["steps"] >= kw["max_steps"] and summary["updates"] > 0, summary
    assert losses and all(math.isfinite(v) for v in losses), f"{case}: {losses}"
    cpu = canter.load(tmp_path / "run", device="cpu")
    obs = _reset_observations(env_id) if "masked" in env_id else _observations(env_id, {}, resumed.run_config)
    here, there = _actions(resumed, obs), _actions(cpu, obs)
    if np.issubdtype(here.dtype, np.floating):
        np.testing.assert_allclose(here, there, rtol=1e-4, atol=1e-4)
    else:
        same = (here == there).reshape(len(obs), -1).all(1)
        assert same.sum() >= len(obs) - 2, f"{case}: {int((~same).sum())} of {len(obs)} actions differ"


def test_a_cpu_run_loads_and_acts_on_the_device(tmp_path, capsys):
    """canter.load(device=...) and canter eval --device put a CPU-trained run (optimizers too) on the device."""
    canter.train("sac", env="Pendulum-v1", run_dir=tmp_path / "run", **dict(OFF, use_sde=True))
    agent = canter.load(tmp_path / "run", device=DEVICE, weights_only=False)
    assert _on_device(agent) and agent.algorithm.ent_coef.log_alpha.device.type == torch.device(DEVICE).type
    obs = _observations("Pendulum-v1", {}, agent.run_config, n=8)
    assert np.isfinite(agent.predict(obs)).all() and np.isfinite(agent.explore(obs)).all()
    from support import run_cli

    code, out, err = run_cli(capsys, "eval", str(tmp_path / "run"), "--episodes", "1", "--device", DEVICE, "--json")
    assert code == 0, err


def _host(value: object) -> bool:
    return isinstance(value, np.ndarray) or (isinstance(value, torch.Tensor) and value.device.type == "cpu")


@pytest.mark.parametrize("algo", ["ppo", "recurrent_ppo", "dqn"])
def test_sample_hands_the_trainers_host_arrays(algo, tmp_path):
    """``Agent.sample`` gives the batch it acted on as the NumPy array it had (not the device copy) and the
    algorithm's outputs copied to the host once, which the env, the rollout and the replay writes read."""
    kw = _settings(algo, max_steps=64, manual_backward=False, learning_starts=0)
    run = canter.make_trainer(algo, env="CartPole-v1", device=DEVICE, run_dir=tmp_path / "run", **kw)
    try:
        agent = run.trainer.agent
        obs = _observations("CartPole-v1", {}, run.trainer.run, n=2)
        if hasattr(agent, "begin_episodes"):
            agent.begin_episodes(np.ones(2, bool))
        actions, batch, out = agent.sample(obs)
        assert isinstance(batch, np.ndarray) and isinstance(actions, np.ndarray)
        assert all(v is None or _host(v) for v in out), [type(v) for v in out]
    finally:
        run.close()


def test_distributed_observations_stay_on_the_host(tmp_path):
    """The learner normalises explorers' observations into CPU tensors (its buffers live there; ``learn``
    moves a batch to the device once) instead of sending them through the device and back."""
    from canter.distributed.trainers import obs_tensor

    run = canter.make_trainer("ppo", env="CartPole-v1", device=DEVICE, run_dir=tmp_path / "run",
                              **_settings("ppo", max_steps=64, normalize_obs=True))
    try:
        obs = _observations("CartPole-v1", {}, run.trainer.run, n=8).reshape(2, 4, -1)
        t = obs_tensor(run.trainer.agent, obs, 2)
        assert t.device.type == "cpu" and t.shape == obs.shape
    finally:
        run.close()


def test_a_recurrent_model_keeps_cudnn_weights_in_one_chunk(tmp_path):
    """On a GPU, an LSTM's parameters stay in the buffer cuDNN laid out (torch's Adam updates them in place),
    so no forward pass warns that the weights are not one contiguous chunk (and copies them); on the CPU the
    flat optimizer is kept."""
    import warnings

    from canter.optim import FlatAdam

    run = canter.make_trainer("recurrent_ppo", env="CartPole-v1", device=DEVICE, run_dir=tmp_path / "run",
                              **_settings("recurrent_ppo", max_steps=128, lstm_hidden=16))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*contiguous chunk.*")
        _losses(run)
    optimizer = run.trainer.agent.algorithm.optimizer
    assert isinstance(optimizer, FlatAdam) == (torch.device(DEVICE).type == "cpu")
