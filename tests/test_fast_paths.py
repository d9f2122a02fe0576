"""The speed paths compute exactly what the plain ones do: hand-derived PPO gradients vs autograd,
FlatAdam vs torch.optim.Adam, the stacked actor-critic vs separate MLPs."""
from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch

from canter.algorithms.mappo import MAPPO, MAPPOConfig
from canter.algorithms.ppo import PPO, PPOConfig
from canter.data.batch import RolloutBatch
from canter.optim import FlatAdam, FlatRMSprop

DISCRETE = (gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(3))
CONTINUOUS = (gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-2, 2, (2,)))
MULTI_DISCRETE = (gym.spaces.Box(-1, 1, (4,)), gym.spaces.MultiDiscrete([3, 2, 4]))
MULTI_BINARY = (gym.spaces.Box(-1, 1, (4,)), gym.spaces.MultiBinary(3))


def _batch(algo: PPO, n: int, seed: int, obs: torch.Tensor | None = None) -> RolloutBatch:
    g = torch.Generator().manual_seed(seed)
    obs = torch.randn(n, *algo.observation_space.shape, generator=g) if obs is None else obs
    with torch.no_grad():
        out = algo.act(obs)
    # perturb the old log-probs so some ratios leave the clip range on either side
    old_logp = out.log_probs + 0.4 * torch.randn(n, generator=g)
    old_v = out.values + 0.3 * torch.randn(n, generator=g)
    return RolloutBatch(obs, out.actions, old_logp, old_v, torch.randn(n, generator=g), torch.randn(n, generator=g))


@pytest.mark.parametrize("spaces", [DISCRETE, CONTINUOUS, MULTI_DISCRETE, MULTI_BINARY],
                         ids=["discrete", "continuous", "multidiscrete", "multibinary"])
@pytest.mark.parametrize("activation", ["tanh", "relu"])
@pytest.mark.parametrize("clip_vf,ent", [(None, 0.0), (0.2, 0.01)])
@pytest.mark.parametrize("critic", [None, [24]], ids=["stacked", "critic_net_arch"])  # the latter: two MLPs
def test_manual_ppo_gradients_match_autograd(spaces, activation, clip_vf, ent, critic):
    cfg = PPOConfig(activation=activation, clip_range_vf=clip_vf, ent_coef=ent, net_arch=[16, 16], critic_net_arch=critic)
    algo = PPO(*spaces, cfg, seed=3)
    assert algo.uses_manual_backward and algo.model.stacked == (critic is None)
    assert_manual_gradients_match_autograd(algo)


@pytest.mark.parametrize("discrete", [True, False])
@pytest.mark.parametrize("critic", [None, [8, 24]])
def test_manual_gradients_match_autograd_with_a_centralised_critic(discrete, critic):
    """MAPPO's split input (the actor's row, the critic's row) through the stacked networks (or two MLPs)."""
    action_space = DISCRETE[1] if discrete else CONTINUOUS[1]
    cfg = MAPPOConfig(net_arch=[16, 16], ent_coef=0.01, critic_net_arch=critic)
    algo = MAPPO(gym.spaces.Box(-1, 1, (2, 7)), action_space, cfg, seed=3)
    assert_manual_gradients_match_autograd(algo)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_manual_gradients_stay_exact_as_the_batch_size_changes(activation):
    """The hand-derived pass reuses its activation buffers from call to call (re-viewed when the row
    count changes, as an on-policy rollout's does by the rows that only reset an env): each call
    still gives autograd's gradients. So do two MLPs of their own widths (critic_net_arch)."""
    apart = PPO(*DISCRETE, PPOConfig(activation=activation, net_arch=[16, 16], critic_net_arch=[32]), seed=3)
    algo = PPO(*DISCRETE, PPOConfig(activation=activation, net_arch=[16, 16]), seed=3)
    for rows in (64, 50, 64, 80):
        assert_manual_gradients_match_autograd(algo, rows=rows)
        assert_manual_gradients_match_autograd(apart, rows=rows)
    bufs = algo.model.body._bufs
    assert bufs.rows == 80 and bufs.storage.numel() >= 2 * 80 * (16 + 16 + 3 + 16 + 16)  # grown to fit 80 rows


def assert_manual_gradients_match_autograd(algo: PPO, obs: torch.Tensor | None = None, rows: int = 64) -> None:
    """One minibatch's gradients and statistics, hand-derived and by autograd, agree (on ``rows``
    random observations, or ``obs``)."""
    mb = algo._normalized(_batch(algo, rows, seed=rows - 60, obs=obs))
    row_auto = algo._grads_autograd(mb)
    g_auto = algo.optimizer.grad.clone()
    algo.optimizer.zero_grad()
    with torch.no_grad():
        row_manual = algo._grads_manual(mb)
    g_manual = algo.optimizer.grad.clone()
    assert g_auto.abs().sum() > 0
    torch.testing.assert_close(g_manual, g_auto, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(row_manual, row_auto, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("critic", [None, [32]])
def test_manual_and_autograd_ppo_learn_the_same(critic):
    def run(manual: bool) -> list[torch.Tensor]:
        torch.manual_seed(0)  # model initialisation
        cfg = PPOConfig(manual_backward=manual, batch_size=32, n_epochs=3, critic_net_arch=critic)
        algo = PPO(*DISCRETE, cfg, seed=0)
        algo.learn(_batch(algo, 64, seed=1))
        return [p.detach().clone() for p in algo.model.parameters()]

    for a, b in zip(run(True), run(False)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("kind", ["adam", "adam-unfused", "rmsprop"])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])  # clipping every step / never
def test_flat_optimizers_match_torch(kind, max_norm):
    """FlatAdam (fused kernel or plain ops) and FlatRMSprop take the same steps as torch.optim."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    ref = copy.deepcopy(net)
    if kind == "rmsprop":
        flat = FlatRMSprop(net.parameters(), lr=7e-3, alpha=0.99, eps=1e-5)
        torch_opt = torch.optim.RMSprop(ref.parameters(), lr=7e-3, alpha=0.99, eps=1e-5)
    else:
        flat = FlatAdam(net.parameters(), lr=1e-2, eps=1e-5)
        flat._fused = kind == "adam" and flat._fused
        torch_opt = torch.optim.Adam(ref.parameters(), lr=1e-2, eps=1e-5)
    for _ in range(5):
        x = torch.randn(16, 4)
        for model, opt in ((net, flat), (ref, torch_opt)):
            opt.zero_grad()
            model(x).pow(2).sum().backward()
            if opt is flat:
                opt.clip_grad_norm_(max_norm)
            else:
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            opt.step()
    for a, b in zip(net.parameters(), ref.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    net.zero_grad()  # sets .grad to None; the optimizer re-attaches its views
    net(torch.randn(2, 4)).sum().backward()
    flat.step()
    assert net[0].weight.grad.data_ptr() == flat.grad.data_ptr()


def test_flat_adam_state_round_trip():
    net = torch.nn.Linear(3, 2)
    opt = FlatAdam(net.parameters(), lr=1e-3)
    net(torch.randn(4, 3)).sum().backward()
    opt.step()
    other = FlatAdam(torch.nn.Linear(3, 2).parameters(), lr=0.5)
    other.load_state_dict(opt.state_dict())
    torch.testing.assert_close(other.exp_avg_sq, opt.exp_avg_sq)
    assert other.param_groups[0]["lr"] == 1e-3 and float(other.step_count) == 1.0
    with pytest.raises(ValueError):
        FlatAdam(net.parameters())  # already owned by ``opt``


def test_stacked_actor_critic_equals_its_two_networks():
    algo = PPO(*CONTINUOUS, PPOConfig(net_arch=[8, 8]), seed=0)
    body = algo.model.body
    obs = torch.randn(5, 3)
    pi, v = algo.model.action_value(obs)
    for g, ref in ((0, pi), (1, v.unsqueeze(-1))):
        h = obs
        for i, (w, b) in enumerate(zip(body.weights, body.biases)):
            h = h @ (w[g].T if body.transposed[i] else w[g]) + b[g]
            h = torch.tanh(h) if i < len(body.weights) - 1 else h[:, : body.outs[g]]
        torch.testing.assert_close(h, ref)
    torch.testing.assert_close(algo.model.action(obs), pi)
    torch.testing.assert_close(algo.model.value(obs), v)


# -- a user's classes: the fast paths reproduce canter's forward passes, not overrides of them --------
from canter.models.cnn import FlatEncoder  # noqa: E402
from canter.models.mlp import ActorCritic  # noqa: E402
from canter.models.q_network import QNetwork  # noqa: E402


class SharperActorCritic(ActorCritic):
    """A user's model: policy logits divided by 0.5."""

    def action_value(self, obs):  # noqa: D102
        out, value = super().action_value(obs)
        return out / 0.5, value


class ScaledQ(QNetwork):
    """A user's model: Q values times 10."""

    def value(self, obs):  # noqa: D102
        return super().value(obs) * 10


class ScaledEncoder(FlatEncoder):
    """A user's parameter-free encoder: features times 10."""

    def forward(self, obs):  # noqa: D102
        return super().forward(obs) * 10


def test_user_subclasses_get_autograd_and_torch_acting():

    from canter.algorithms.dqn import DQN, DQNConfig

    space, actions = gym.spaces.Box(-5, 5, (4,)), gym.spaces.Discrete(2)
    obs = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    model = SharperActorCritic(space, actions)
    assert not model.manual_backward and model.action_value_numpy(obs) is None
    q = ScaledQ(space, actions, net_arch=[16])
    assert not q.manual_backward and not q.numpy_acting
    for kind in (f"{__name__}:ScaledEncoder", "flat"):
        ppo = PPO(space, actions, PPOConfig(net_arch=[16], encoder=kind), seed=0)
        fast = ppo.act_numpy(obs, deterministic=True)
        if fast is not None:  # the NumPy path, where taken, agrees with the module's own pass
            np.testing.assert_array_equal(fast.actions, ppo.act(torch.from_numpy(obs), deterministic=True).actions.numpy())
        assert (fast is None) == (kind != "flat")
        dqn = DQN(space, actions, DQNConfig(net_arch=[16], encoder=kind), seed=0)
        with torch.no_grad():
            want = dqn.q.value(torch.from_numpy(obs)).argmax(1)
        torch.testing.assert_close(torch.as_tensor(dqn.act(torch.from_numpy(obs), deterministic=True).actions), want)
        numpy_acts = dqn.act_numpy(obs, deterministic=True)
        assert (numpy_acts is None) == (kind != "flat")


def test_bootstrap_values_take_the_numpy_pass_where_the_critic_is_canters_own():
    """``Agent.value`` (a rollout's last value) comes from the model's NumPy pass, as the stored
    values do, and agrees with torch's; an algorithm that computes its value otherwise keeps it."""

    from canter.agents.agent import Agent

    obs = np.random.default_rng(0).standard_normal((8, *DISCRETE[0].shape)).astype(np.float32)
    for normalize_value in (False, True):  # PPO's value normalisation scales the critic's output back
        algo = PPO(*DISCRETE, PPOConfig(net_arch=[16, 16], normalize_value=normalize_value), seed=0)
        if normalize_value:
            algo.value_rms.update(np.array([3.0, 9.0, 40.0]))
        assert algo.value_numpy(obs) is not None
        with torch.no_grad():
            torch.testing.assert_close(Agent(algo).value(obs), algo.value(torch.from_numpy(obs)))

    class HalfValue(PPO):
        def value(self, obs):  # noqa: D102
            return super().value(obs) / 2

    half = HalfValue(*DISCRETE, PPOConfig(net_arch=[16, 16]), seed=0)
    assert half.value_numpy(obs) is None
    with torch.no_grad():
        torch.testing.assert_close(Agent(half).value(obs), PPO.value(half, torch.from_numpy(obs)) / 2)


def test_deferred_statistics_are_the_means_of_the_minibatch_rows():
    """PPO's hand-derived pass leaves its statistics to ``learn``, which reduces all minibatches at
    once: the same numbers as averaging each minibatch's row; minibatches of unequal size too."""
    from canter.algorithms.ppo import PendingStats, mean_rows

    rng = np.random.default_rng(0)
    signs = np.array([-1.0, 1.0, 1.0, 1.0, 1.0], np.float32)

    def pending(n):
        ratio = np.exp(rng.normal(0, 0.3, n)).astype(np.float32)
        clipped = np.clip(ratio, 0.8, 1.2)
        adv = rng.normal(size=n).astype(np.float32)
        return PendingStats(adv * ratio, adv * clipped, rng.random(n).astype(np.float32),
                            rng.random(n).astype(np.float32), ratio, np.log(ratio), clipped)

    for sizes in ([64] * 5, [64, 64, 50]):
        rows = [pending(n) for n in sizes]
        want = np.mean([r.row(signs) for r in rows], 0)
        np.testing.assert_allclose(mean_rows(rows, signs), want, rtol=1e-6)
        assert want[4] > 0 and want[3] > 0  # some ratios clipped; the KL estimate is positive
    kl = rows[0].ratio - 1 - rows[0].log_ratio
    assert rows[0].approx_kl() == pytest.approx(float(kl.mean()), rel=1e-6)


def test_a_copied_stacked_mlp_makes_its_own_activation_buffers():
    """``copy.deepcopy`` after a hand-derived pass: the copy's cached pass still equals its forward
    (copied NumPy views of the reused buffers would no longer share the tensors' memory)."""
    from canter.models.stacked import StackedMLP

    torch.manual_seed(0)
    net = StackedMLP(2, 4, [8, 8], [3, 1], "tanh")
    x = torch.randn(5, 4)
    net.forward_cached(x)
    twin = copy.deepcopy(net)
    out, _ = twin.forward_cached(x)
    with torch.no_grad():
        torch.testing.assert_close(out, twin.forward(x))


def test_a_subclass_overriding_act_or_predict_is_what_the_agent_acts_with():
    """The Agent took the algorithm's NumPy shortcut (act_numpy) whenever it answered, so a user's DQN
    overriding ``act`` (its own exploration) or a PPO overriding ``predict`` was never called in training,
    evaluation or ``Agent.predict``."""
    from canter.agents.agent import Agent
    from canter.algorithms.base import ActOutput
    from canter.algorithms.dqn import DQN, DQNConfig

    calls = []

    class LastActionDQN(DQN):
        def act(self, obs, deterministic=False):  # noqa: D102
            calls.append("act")
            return ActOutput(torch.full((len(obs),), 2, dtype=torch.long))

    class FirstActionPPO(PPO):
        def predict(self, obs):  # noqa: D102
            calls.append("predict")
            return torch.zeros(len(obs), dtype=torch.long)

    obs = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    dqn = Agent(LastActionDQN(*DISCRETE, DQNConfig(net_arch=[16]), seed=0))
    assert dqn.sample(obs)[0].tolist() == [2] * 5 and dqn.predict(obs).tolist() == [2] * 5
    assert dqn.explore(obs[0]) == 2 and calls == ["act"] * 3
    calls.clear()
    ppo = Agent(FirstActionPPO(*DISCRETE, PPOConfig(net_arch=[16]), seed=0))
    assert ppo.predict(obs).tolist() == [0] * 5 and calls == ["predict"]
    assert ppo.sample(obs)[2].log_probs is not None  # sampling is PPO's own (its NumPy path still answers)
    plain = Agent(PPO(*DISCRETE, PPOConfig(net_arch=[16]), seed=0))  # canter's own classes keep the shortcut
    assert isinstance(plain.sample(obs)[1], np.ndarray)


@pytest.mark.parametrize("algo", ["ppo", "a2c"])
def test_a_subclass_overriding_log_prob_entropy_learns_with_it(algo):
    """The hand-derived gradients reproduce canter's log_prob_entropy; a user's PPO or A2C overriding it
    (another entropy, a reshaped log-probability) trained on the built-in terms without calling it."""
    from canter.algorithms.a2c import A2C, A2CConfig

    base, config = (PPO, PPOConfig(net_arch=[8], n_epochs=1, batch_size=16)) if algo == "ppo" else (
        A2C, A2CConfig(net_arch=[8]))
    calls = []

    class NoEntropy(base):
        def log_prob_entropy(self, out, actions):  # noqa: D102
            calls.append(len(out))
            logp, entropy = super().log_prob_entropy(out, actions)
            return logp, entropy * 0.0

    agent = NoEntropy(*DISCRETE, config, seed=0)
    assert agent.config.manual_backward and agent.model.manual_backward
    stats = agent.learn(_batch(agent, 16, seed=1))
    assert calls and stats["entropy"] == 0.0
    assert not agent.uses_manual_backward and base(*DISCRETE, config, seed=0).uses_manual_backward
