"""DDPG, TD3, SAC, discrete SAC and the DQN extensions: losses, gradient isolation, options, errors."""
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.checkpoint import flatten_state
from canter.cli import main
from canter.data import ReplayBatch
from canter.errors import CanterError, CanterWarning
from canter.models.distributional import quantile_huber_loss

TINY = dict(net_arch=[16], learning_starts=32, batch_size=16, eval_every=0, eval_episodes=1)


def _batch(trainer, n: int = 32) -> ReplayBatch:
    """A random batch in the trainer's spaces (algorithm action space)."""
    g = torch.Generator().manual_seed(0)
    obs_dim = trainer.env.single_observation_space.shape[0]
    space = trainer.agent.action_space
    if isinstance(space, gym.spaces.Discrete):
        actions = torch.randint(space.n, (n,), generator=g)
    else:
        actions = torch.rand((n,) + space.shape, generator=g) * 2 - 1
    return ReplayBatch(torch.randn(n, obs_dim, generator=g), actions, torch.randn(n, generator=g),
                       torch.randn(n, obs_dim, generator=g), (torch.rand(n, generator=g) < 0.2).float(),
                       torch.full((n,), 0.99), torch.ones(n), torch.arange(n))


def _grads(module: torch.nn.Module) -> list[torch.Tensor | None]:
    return [p.grad for p in module.parameters()]


def _zero(module: torch.nn.Module) -> None:
    for p in module.parameters():
        p.grad = None


@pytest.mark.parametrize("algo, env", [("sac", "Pendulum-v1"), ("td3", "Pendulum-v1"), ("ddpg", "Pendulum-v1"),
                                       ("sac_discrete", "CartPole-v1")])
def test_critic_loss_leaves_actor_gradients_at_zero_and_vice_versa(algo, env):
    trainer = canter.make_trainer(algo, env, **TINY)
    a = trainer.algorithm
    model = a.model
    actor, critic = model.actor, (model.critic if hasattr(model, "critic") else model.q)
    batch = _batch(trainer)
    alpha = (a.ent_coef.value,) if hasattr(a, "ent_coef") else ()
    _zero(model)
    a.critic_loss(batch, *alpha)[0].backward()
    assert all(g is None for g in _grads(actor)), "critic loss reached the actor"
    assert any(g is not None and g.abs().sum() > 0 for g in _grads(critic))
    _zero(model)
    out = a.actor_loss(batch.obs, *alpha)
    (out[0] if isinstance(out, tuple) else out).backward()
    assert all(g is None for g in _grads(critic)), "actor loss reached the critic"
    assert any(g is not None and g.abs().sum() > 0 for g in _grads(actor))
    assert all(p.requires_grad for p in critic.parameters())  # unfrozen again after the actor loss
    trainer.close()


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_critic_parameters_frozen_by_the_user_stay_frozen(algo):
    """The actor loss froze the critic's parameters for its pass and then set requires_grad on all of
    them, also on those a user had frozen (a pretrained encoder): the critic optimizer then trained them."""
    trainer = canter.make_trainer(algo, "Pendulum-v1", **TINY)
    a = trainer.algorithm
    fixed = a.critic.q[0][0].weight
    fixed.requires_grad_(False)
    before = fixed.detach().clone()
    for _ in range(3):
        a.learn(_batch(trainer))
    trainer.close()
    assert not fixed.requires_grad and torch.equal(fixed.detach(), before)
    assert all(p.requires_grad for p in a.actor.parameters())


def test_sac_log_prob_matches_torch_distributions():
    trainer = canter.make_trainer("sac", "Pendulum-v1", **TINY)
    a = trainer.algorithm
    obs = torch.randn(64, 3)
    a.generator.manual_seed(5)
    actions, log_prob = a.sample(obs)
    mean, log_std, _ = a.actor(obs)
    u = torch.atanh(actions.clamp(-1 + 1e-6, 1 - 1e-6)).double()
    ref = torch.distributions.Normal(mean.double(), log_std.exp().double()).log_prob(u).sum(-1)
    ref = ref - torch.log(1 - torch.tanh(u) ** 2).sum(-1)
    torch.testing.assert_close(log_prob.double(), ref, rtol=1e-3, atol=1e-3)


def test_td3_target_smoothing_and_clipping():
    trainer = canter.make_trainer("td3", "Pendulum-v1", target_policy_noise=0.0, **TINY)
    a = trainer.algorithm
    batch = _batch(trainer)
    with torch.no_grad():
        next_a = a.actor_target(batch.next_obs)
        q = a.critic_target(batch.next_obs, next_a).min(0).values
        y = batch.rewards + 0.99 * (1 - batch.terminated) * q
        expected = ((a.critic(batch.obs, batch.actions) - y) ** 2).mean(1).sum()
        loss, td = a.critic_loss(batch)
    torch.testing.assert_close(loss, expected)
    assert td.shape == (2, 32)


def test_quantile_huber_loss_by_hand():
    # one sample, two predicted quantiles (tau 0.25, 0.75), one target 1.0
    current = torch.tensor([[0.0, 2.0]])
    target = torch.tensor([[1.0]])
    # u = target - current = [1, -1]: huber 0.5 each; weights |0.25 - 0| and |0.75 - 1|
    assert quantile_huber_loss(current, target).item() == pytest.approx(0.25 * 0.5 + 0.25 * 0.5)
    far = quantile_huber_loss(torch.tensor([[0.0]]), torch.tensor([[3.0]]))  # linear part: 0.5 * (3 - 0.5)
    assert far.item() == pytest.approx(0.5 * 2.5)


def _autograd_quantile_huber(current, target, kappa):
    """The loss written plainly (autograd differentiates it): the reference for the hand-derived one."""
    n = current.shape[-1]
    delta = target.unsqueeze(-2) - current.unsqueeze(-1)
    huber = torch.where(delta.abs() <= kappa, 0.5 * delta.pow(2), kappa * (delta.abs() - 0.5 * kappa))
    tau = (torch.arange(n, dtype=current.dtype) + 0.5).div(n).unsqueeze(-1)
    return ((tau - (delta.detach() < 0).to(current.dtype)).abs() * huber / kappa).sum(-2).mean(-1)


@pytest.mark.parametrize("kappa", [1.0, 0.5, 2.0])
def test_quantile_huber_loss_gradient_equals_autograd(kappa):
    g = torch.Generator().manual_seed(0)
    current = (3 * torch.randn(3, 16, 25, generator=g, dtype=torch.float64)).requires_grad_()
    target = 3 * torch.randn(16, 46, generator=g, dtype=torch.float64)
    target[:, :2] = current.detach()[0, :, :2]  # exact ties with some predictions
    weights = torch.rand(3, 16, generator=g, dtype=torch.float64)
    ours = (weights * quantile_huber_loss(current, target.unsqueeze(0), kappa)).sum()
    theirs = (weights * _autograd_quantile_huber(current, target.unsqueeze(0), kappa)).sum()
    torch.testing.assert_close(ours, theirs)
    torch.testing.assert_close(torch.autograd.grad(ours, current)[0], torch.autograd.grad(theirs, current)[0])
    with pytest.raises(ValueError, match="target as a constant"):
        quantile_huber_loss(current, current.detach().requires_grad_())


@pytest.mark.parametrize("algo, env, opts", [
    ("sac", "Pendulum-v1", dict(use_sde=True, train_freq=8, gradient_steps=2)),
    ("sac", "Pendulum-v1", dict(ent_coef="0.1", n_step=3, prioritized=True)),
    ("sac", "Pendulum-v1", dict(ent_coef="auto_0.1", normalize_obs=True, n_envs=2)),
    ("td3", "Pendulum-v1", dict(action_noise="ou", n_envs=2)),
    ("ddpg", "MountainCarContinuous-v0", dict(action_noise="none")),
    ("sac_discrete", "CartPole-v1", dict(prioritized=True)),
    ("dqn", "CartPole-v1", dict(n_quantiles=8, dueling=True, double_q=True)),
    ("rainbow", "Acrobot-v1", dict(n_quantiles=8)),
    ("qrdqn", "CartPole-v1", dict(n_quantiles=4, n_envs=2)),
])
def test_options_train_with_finite_losses(algo, env, opts):
    kw = {**TINY, **opts}
    trainer = canter.make_trainer(algo, env, max_steps=160, train_freq=kw.pop("train_freq", 4), **kw)
    records = list(trainer())
    losses = [v for r in records for v in r.losses.values()]
    assert losses and np.isfinite(losses).all()
    assert records[-1].step >= 160
    trainer.close()


def test_gsde_noise_is_held_between_resamples():
    trainer = canter.make_trainer("sac", "Pendulum-v1", use_sde=True, sde_sample_freq=3, **TINY)
    a = trainer.algorithm
    obs = torch.randn(1, 3)
    acts = [a.act(obs).actions for _ in range(6)]
    assert torch.equal(acts[0], acts[1]) and torch.equal(acts[1], acts[2])  # same obs, same noise matrix
    assert not torch.equal(acts[2], acts[3]) and torch.equal(acts[3], acts[5])
    trainer.close()


@pytest.mark.parametrize("freq", [-1, 12])
def test_gsde_noise_is_resampled_at_the_start_of_every_collection_phase(freq):
    """New matrices when a collection phase starts (SB3's collect_rollouts), also when learning_starts
    is not a multiple of train_freq (with -1 they were drawn every train_freq acting calls counted from
    learning_starts: at steps 100, 132, ... while the phases start at 128, 160, ...); with
    sde_sample_freq N > 0 also every N steps counted from the phase's start (SB3's
    ``num_collected_steps % sde_sample_freq``; they were counted over the whole run)."""
    trainer = canter.make_trainer("sac", "Pendulum-v1", use_sde=True, max_steps=260, sde_sample_freq=freq,
                                  **{**TINY, "learning_starts": 100, "train_freq": 32})
    a = trainer.algorithm
    draw, drawn_at = a._exploration_weights, []

    def watched(n):
        before = a.sde_weights
        weights = draw(n)
        if weights is not before:
            drawn_at.append(trainer.step)
        return weights

    a._exploration_weights = watched
    phase_ends = [r.step for r in trainer()]
    trainer.close()
    assert phase_ends[:3] == [32, 64, 96]  # one record per phase: the phases start at multiples of 32
    every = 32 if freq < 0 else freq  # policy actions, counted from the phase's start (its first: step 100)
    end = phase_ends[-1]  # the budget rounded up to a whole phase
    expected = [*range(100, 128, every), *(t for s in range(128, end, 32) for t in range(s, s + 32, every))]
    assert drawn_at == expected, (drawn_at, phase_ends)


def test_ou_noise_is_correlated_and_reset_at_episode_end():
    trainer = canter.make_trainer("td3", "Pendulum-v1", action_noise="ou", noise_std=0.5, n_envs=2, **TINY)
    a = trainer.algorithm
    obs = torch.zeros(2, 3)
    for _ in range(20):
        a.act(obs)
    state = a.ou_state.clone()
    assert (state != 0).all()
    a.reset_noise(torch.tensor([True, False]))
    assert (a.ou_state[0] == 0).all() and torch.equal(a.ou_state[1], state[1])
    trainer.close()


def test_ou_noise_restarts_when_a_resume_starts_fresh_episodes(tmp_path):
    """A resume that cannot restore the env resets it (fresh episodes); the Ornstein-Uhlenbeck noise of
    the dropped episodes must not carry into the new ones (it restarts at an episode end)."""
    from support import state_after_inexact_resume

    exact, ou_state = state_after_inexact_resume(
        "td3", "Pendulum-v1", "LockedPendulumOU-test", lambda t: t.algorithm.ou_state.clone(), tmp_path / "run",
        n_envs=2, max_steps=500, eval_every=0, eval_episodes=1, tensorboard=False, seed=0, learning_starts=50,
        action_noise="ou", net_arch=[16], batch_size=16)
    assert exact is False and torch.equal(ou_state, torch.zeros_like(ou_state))


@pytest.mark.parametrize("algo", ["sac", "td3", "sac_discrete", "rainbow"])
def test_checkpoint_round_trip_gives_identical_actions(algo, tmp_path):
    env = "CartPole-v1" if algo in ("sac_discrete", "rainbow") else "Pendulum-v1"
    extra = dict(n_quantiles=8) if algo == "rainbow" else {}
    agent = canter.train(algo, env, max_steps=96, run_dir=tmp_path / "run", train_freq=4, **TINY, **extra)
    loaded = canter.load(tmp_path / "run", weights_only=False)
    obs = np.random.default_rng(0).normal(size=(5,) + agent.observation_space.shape).astype(np.float32)
    np.testing.assert_array_equal(agent.predict(obs), loaded.predict(obs))
    saved, restored = agent.algorithm.state_dict(), loaded.algorithm.state_dict()
    assert saved["optimizers"].keys() == restored["optimizers"].keys()
    skeleton, tensors = flatten_state(saved["optimizers"])
    skeleton_back, tensors_back = flatten_state(restored["optimizers"])
    assert skeleton == skeleton_back and tensors.keys() == tensors_back.keys()
    assert any("exp_avg" in k for k in tensors)  # the Adam moments are part of the checkpoint
    for key, value in tensors.items():
        torch.testing.assert_close(value, tensors_back[key])
    for key, value in saved["extra"].items():
        if isinstance(value, torch.Tensor):
            torch.testing.assert_close(value, restored["extra"][key])


# ---------------------------------------------------------------------------------------------- bad input


def _cli_error(capsys, *argv: str) -> str:
    capsys.readouterr()
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("canter: error:") and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("algo, env, kind", [("sac", "CartPole-v1", "Box"), ("td3", "Acrobot-v1", "Box"),
                                             ("ddpg", "CartPole-v1", "Box"), ("dqn", "Pendulum-v1", "Discrete"),
                                             ("sac_discrete", "Pendulum-v1", "Discrete")])
def test_wrong_action_space_is_a_one_line_error(capsys, tmp_path, algo, env, kind):
    line = _cli_error(capsys, "train", algo, "--env", env, "--run-dir", str(tmp_path / "r"), "--quiet")
    assert f"needs a {kind} action space" in line
    assert not (tmp_path / "r").exists()


def test_buffer_smaller_than_batch_is_a_one_line_error(capsys, tmp_path):
    line = _cli_error(capsys, "train", "sac", "--env", "Pendulum-v1", "--set", "buffer_size=100",
                      "--set", "batch_size=256", "--run-dir", str(tmp_path / "r"))
    assert "buffer_size" in line and "batch_size" in line
    assert not (tmp_path / "r").exists()


def test_a_minibatch_too_large_for_memory_is_a_one_line_error(monkeypatch):
    """A batch_size whose gradient step torch cannot allocate (batch_size=10**8: 95 GiB) ended the run
    with torch's RuntimeError and a traceback of C++ frames; other errors still propagate as they are."""
    trainer = canter.make_trainer("sac", "Pendulum-v1", max_steps=64, **TINY)
    oom = RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: "
                       "you tried to allocate 102400000000 bytes. Error code 12 (Cannot allocate memory)")

    def learn(batch):
        raise oom

    monkeypatch.setattr(trainer.agent, "learn", learn)
    with pytest.raises(CanterError, match=r"batch_size 16 .*95\.4 GiB.*lower hparams\.batch_size"):
        list(trainer())
    oom = RuntimeError("mat1 and mat2 shapes cannot be multiplied")
    with pytest.raises(RuntimeError, match="shapes"):
        trainer.train(1)
    trainer.close()


def test_bad_entropy_coefficient_is_a_one_line_error(capsys, tmp_path):
    line = _cli_error(capsys, "train", "sac", "--env", "Pendulum-v1", "--set", "ent_coef=autox",
                      "--run-dir", str(tmp_path / "r"))
    assert "ent_coef" in line


@pytest.mark.parametrize("env, module, extra", [("LunarLander-v3", "Box2D", "box2d"),
                                                ("HalfCheetah-v5", "mujoco", "mujoco")])
def test_missing_extra_is_a_one_line_error(capsys, monkeypatch, tmp_path, env, module, extra):
    for name in list(sys.modules):
        if name == module or name.startswith(module + ".") or name.startswith("gymnasium.envs.box2d") \
                or name.startswith("gymnasium.envs.mujoco"):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if the package were missing
    line = _cli_error(capsys, "train", "sac", "--env", env, "--run-dir", str(tmp_path / "r"))
    assert f"canter[{extra}]" in line
    assert not (tmp_path / "r").exists()


def test_learning_starts_beyond_the_budget_is_a_warning_not_an_error(capsys, tmp_path):
    with pytest.warns(CanterWarning, match="learning_starts"):
        trainer = canter.make_trainer("td3", "Pendulum-v1", max_steps=50, learning_starts=100, eval_every=0,
                                      eval_episodes=1)
    assert list(trainer())[-1].step == 50
    trainer.close()
    capsys.readouterr()
    code = main(["train", "sac", "--env", "Pendulum-v1", "--max-steps", "20", "--set", "learning_starts=100",
                 "--eval-episodes", "1", "--quiet", "--run-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 0
    assert [line for line in err.splitlines() if line.strip()] == [
        "canter: warning: learning_starts (100) >= max_steps (20): the run only collects random actions and never "
        "learns"
    ]


def test_ent_coef_parsing():
    from canter.algorithms.offpolicy import parse_ent_coef

    assert parse_ent_coef("auto") == (True, 1.0)
    assert parse_ent_coef("auto_0.1") == (True, 0.1)
    assert parse_ent_coef("0.2") == (False, 0.2)
    for bad in ("-1", "auto_", "x", "0"):
        with pytest.raises(CanterError):
            parse_ent_coef(bad)


def test_learned_entropy_coefficient_takes_the_autograd_adam_step():
    """EntropyCoef sets log_alpha's gradient in closed form; it must equal autograd's for
    ``log_alpha * mean(entropy - target)`` and move log_alpha the way torch.optim.Adam does."""
    from canter.algorithms.offpolicy import EntropyCoef

    coef = EntropyCoef("auto_0.5", lr=0.01, target_entropy=0.3, device=torch.device("cpu"))
    ref = torch.tensor(float(np.log(0.5)), requires_grad=True)
    opt = torch.optim.Adam([ref], lr=0.01)
    g = torch.Generator().manual_seed(0)
    for _ in range(5):
        entropy = torch.rand(64, generator=g) * 1.2
        stats = coef.update(entropy)
        loss = ref * (entropy - 0.3).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        assert stats["ent_coef_loss"] == pytest.approx(loss.item(), rel=1e-5, abs=1e-7)
        assert coef.log_alpha.item() == pytest.approx(ref.item(), rel=1e-5, abs=1e-7)
    assert coef.log_alpha.item() != pytest.approx(float(np.log(0.5)))  # it moved


@pytest.mark.parametrize("algo", ["sac", "td3", "ddpg"])
def test_box_actions_of_several_dimensions_are_stored_flat_and_reach_the_env_in_its_shape(algo):
    from canter.registry import register
    from support import Box22Actions

    register("env", f"Box22Actions-{algo}-offpolicy-test")(lambda render_mode=None, **kw: Box22Actions())
    trainer = canter.make_trainer(algo, f"Box22Actions-{algo}-offpolicy-test", n_envs=2, max_steps=160,
                                  learning_starts=100, batch_size=16, net_arch=[32, 32], eval_every=0, eval_episodes=1)
    records = list(trainer())  # warm-up and policy actions: the env asserts their shape on every step
    assert trainer.buffer.actions.shape[-1] == 4
    assert all(np.isfinite(v) for r in records for v in r.losses.values()) and trainer.algorithm.updates > 0
    assert trainer.agent.predict(np.zeros((3, 3), np.float32)).shape == (3, 2, 2)
    trainer.close()


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_scalar_box_actions_reach_the_env_as_scalars(algo):
    """A Box action space of shape (): actions reached the env (warm-up, policy, predict) as arrays of
    shape (1,), which the space does not contain."""
    from canter.registry import register
    from support import ScalarAction

    register("env", f"ScalarAction-{algo}-offpolicy-test")(lambda render_mode=None, **kw: ScalarAction())
    trainer = canter.make_trainer(algo, f"ScalarAction-{algo}-offpolicy-test", n_envs=2, max_steps=80,
                                  learning_starts=40, batch_size=16, net_arch=[16], eval_every=0, eval_episodes=1)
    list(trainer())  # the env asserts the shape of every action
    assert trainer.algorithm.updates > 0 and trainer.buffer.actions.shape[-1] == 1
    assert trainer.agent.predict(np.zeros((3, 3), np.float32)).shape == (3,)
    assert trainer.agent.action_space.contains(trainer.agent.predict(np.zeros(3, np.float32)))
    trainer.close()


@pytest.mark.parametrize("algo", ["sac", "dqn"])
def test_replay_keeps_raw_data_and_normalises_batches_with_the_statistics_of_their_draw(algo):
    """As SB3 with VecNormalize: the buffer holds the env's rewards and observations; a sampled batch
    is normalised with the current statistics, which have seen every observation, the random
    warm-up's included (the first update saw statistics of zero observations, and rewards stored
    at collection time kept the scale of that moment)."""
    env = "Pendulum-v1" if algo == "sac" else "CartPole-v1"
    trainer = canter.make_trainer(algo, env, seed=0, max_steps=600, learning_starts=500, batch_size=32,
                                  net_arch=[16], normalize_obs=True, normalize_reward=True, eval_every=10_000)
    agent, raw, seen = trainer.agent, [], []
    count_step, prepare = trainer.count_step, agent.prepare_replay_batch
    trainer.count_step = lambda step: (raw.append(step.reward.copy()), count_step(step))[1]
    agent.prepare_replay_batch = lambda batch: (seen.append(agent.obs_rms.count), prepare(batch))[1]
    for _ in trainer():
        pass
    assert seen and seen[0] >= 500  # the warm-up's observations are in the statistics of the first update
    np.testing.assert_array_equal(trainer.buffer.rewards[:trainer.step, 0], np.concatenate(raw))  # the env's rewards
    batch = trainer.buffer.sample(64)
    scale = 1.0 / np.sqrt(agent.ret_rms.var + 1e-8)
    assert scale != pytest.approx(1.0, abs=0.05)
    torch.testing.assert_close(agent.prepare_replay_batch(batch).rewards, batch.rewards * float(scale))


# -- schedules, acting and what the off-policy trainer hands the replay buffer -----------------------
def _algo(name: str, obs_dim: int, action_space: gym.Space, **hp):
    from canter.config import build
    from canter.registry import lookup

    cls = lookup("algorithm", name)
    torch.manual_seed(0)
    return cls(gym.spaces.Box(-10, 10, (obs_dim,), np.float32), action_space, build(cls.Config, dict(net_arch=[16], **hp)),
               seed=0)


def test_dqn_epsilon_decays_linearly_over_the_exploration_fraction_then_stays_at_the_final_value():
    algo = _algo("dqn", 3, gym.spaces.Discrete(2), exploration_initial_eps=1.0, exploration_final_eps=0.1,
                 exploration_fraction=0.5)
    for step, eps in [(0, 1.0), (250, 0.55), (400, 0.28), (500, 0.1), (900, 0.1), (1000, 0.1)]:
        algo.set_progress(step, 1000)
        assert algo.epsilon == pytest.approx(eps), step
    # and in a run: the trainer advances it with the env steps, to the final value by the end
    trainer = canter.make_trainer("dqn", "CartPole-v1", seed=0, max_steps=400, exploration_fraction=0.5,
                                  exploration_final_eps=0.05, **TINY)
    for _ in trainer():
        pass
    trainer.close()
    assert trainer.algorithm.epsilon == pytest.approx(0.05)


def test_dqn_hard_target_update_happens_every_target_update_interval_env_steps():
    algo = _algo("dqn", 3, gym.spaces.Discrete(2), target_update_interval=100, tau=1.0)
    online, target = list(algo.q.parameters()), list(algo.q_target.parameters())
    with torch.no_grad():
        for p in online:
            p.add_(1.0)
    for step in (0, 1, 99):
        algo.set_progress(step, 1000)
        assert not any(torch.equal(a, b) for a, b in zip(online, target)), step  # not synced yet
    algo.set_progress(100, 1000)
    assert all(torch.equal(a, b) for a, b in zip(online, target)) and algo.target_syncs == 1


def test_sac_deterministic_action_is_tanh_of_the_mean_and_td3_noise_stays_in_bounds():
    sac = _algo("sac", 3, gym.spaces.Box(-1, 1, (2,), np.float32))
    obs = torch.randn(64, 3, generator=torch.Generator().manual_seed(0)) * 5
    with torch.no_grad():
        mean = sac.actor(obs)[0]
        first = sac.act(obs, deterministic=True).actions
        torch.testing.assert_close(first, torch.tanh(mean))
        torch.testing.assert_close(sac.act(obs, deterministic=True).actions, first)  # no sampling
        assert not torch.allclose(sac.act(obs).actions, first)  # exploring does sample
    td3 = _algo("td3", 3, gym.spaces.Box(-1, 1, (2,), np.float32), noise_std=5.0)
    with torch.no_grad():
        noisy = td3.act(obs).actions
    assert noisy.abs().max() <= 1.0 and (noisy.abs() == 1.0).any()  # large noise, clipped to the action scale


def test_off_policy_trainer_stores_truncations_as_not_terminated_and_explores_randomly_before_learning_starts():
    trainer = canter.make_trainer("dqn", "CartPole-v1", seed=0, max_steps=300, env_kwargs={"max_episode_steps": 5},
                                  **{**TINY, "learning_starts": 200})
    calls = []
    act = trainer.algorithm.act
    trainer.algorithm.act = lambda obs, deterministic=False: (calls.append(trainer.step), act(obs, deterministic))[1]
    act_numpy = trainer.algorithm.act_numpy
    trainer.algorithm.act_numpy = lambda obs, deterministic=False: (calls.append(trainer.step),
                                                                    act_numpy(obs, deterministic))[1]
    for _ in trainer():
        pass
    trainer.close()
    buf = trainer.buffer
    assert buf.done.sum() >= 50 and not buf.terminated.any()  # every 5-step episode was cut by the time limit
    assert calls and min(calls) >= 200  # the policy is first asked at learning_starts


def test_off_policy_trainer_feeds_new_priorities_back_to_a_prioritized_buffer():
    trainer = canter.make_trainer("dqn", "CartPole-v1", seed=0, max_steps=200, prioritized=True, **TINY)
    for _ in trainer():
        pass
    trainer.close()
    buf = trainer.buffer
    leaves = buf.sums.leaves[buf.chronological_indices()]
    assert len(leaves) > 100
    # without feedback every transition keeps the priority it entered with (1, the largest seen)
    assert len(np.unique(leaves)) > 10  # sampled transitions got their own |TD error| priorities


def test_adam_eps_reaches_the_q_networks_optimizer():
    """DQN's family had no Adam epsilon (always 1e-8): Rainbow's Atari preset could not set the paper's 1.5e-4."""
    trainer = canter.make_trainer("dqn", "CartPole-v1", seed=0, adam_eps=1e-3)
    assert trainer.agent.algorithm.optimizer.param_groups[0]["eps"] == 1e-3
    trainer.close()
    trainer = canter.make_trainer("rainbow", "ALE/Pong-v5", seed=0, buffer_size=1000)
    assert trainer.agent.algorithm.optimizer.param_groups[0]["eps"] == 1.5e-4  # the preset: Hessel et al.'s
    trainer.close()


@pytest.mark.parametrize("algo,env", [("dqn", "CartPole-v1"), ("sac", "Pendulum-v1")])
def test_first_training_phase_is_the_first_to_end_past_learning_starts(algo, env):
    """As Stable-Baselines3 (``num_timesteps > learning_starts``): with learning_starts 8 and train_freq 4
    the phases ending at steps 12, 16, 20 train; the one ending at step 8 does not (it trained before:
    one gradient step more than SB3, and more with larger gradient_steps)."""
    trainer = canter.make_trainer(algo, env, seed=0, max_steps=20,
                                  **{**TINY, "learning_starts": 8, "train_freq": 4, "gradient_steps": 2})
    trained = [(r.step, trainer.algorithm.updates) for r in trainer()]
    trainer.close()
    assert trained == [(4, 0), (8, 0), (12, 2), (16, 4), (20, 6)]


def test_target_updates_copy_batch_norm_statistics():
    """SoftUpdate moved parameters only: a user model's batch-norm running statistics stayed at their
    initial values in the target network (SB3 copies them at every target update)."""
    from canter.algorithms.offpolicy import SoftUpdate

    online, target = torch.nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    online.train()
    online(torch.randn(16, 3) * 5 + 2)  # the online net's statistics move
    weight = target.weight.clone()
    SoftUpdate(target, online)(0.005)
    assert torch.equal(target.running_mean, online.running_mean) and torch.equal(target.running_var, online.running_var)
    assert torch.allclose(target.weight, weight)  # parameters still move by tau only (both are 1 here)
