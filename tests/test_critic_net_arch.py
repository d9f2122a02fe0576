"""critic_net_arch: the critic's hidden layers apart from the actor's, Stable-Baselines3's
``net_arch=dict(pi=[...], vf=[...])`` (on-policy) and ``dict(pi=[...], qf=[...])`` (off-policy), which canter refused
(net_arch was one list for both). Different widths make actor and critic two MLPs, not one stacked network: their
hand-derived gradients and NumPy acting are checked against autograd and torch in tests/test_fast_paths.py and
tests/test_onpolicy_fast_paths.py."""
from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch
from support import MIXED, assert_one_line_error, assert_train_refused, run_cli
from torch import nn

import canter
from canter.algorithms.base import widest_layer
from canter.algorithms.ppo import PPO, PPOConfig
from canter.checkpoint import flatten_state
from canter.config import resolve_config
from canter.errors import CanterError
from canter.registry import lookup

DISCRETE = (gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2))
BOX = (gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-2, 2, (1,)))
ON_POLICY = ("ppo", "a2c", "reinforce", "trpo", "npg", "impala", "appo", "recurrent_ppo")
OFF_POLICY = ("sac", "tqc", "td3", "ddpg", "td3bc", "sac_discrete")
TINY_PPO = dict(n_envs=2, n_steps=64, batch_size=64, n_epochs=2, eval_every=0, eval_episodes=1, target_reward=None,
                quiet=True)


def _hidden(module: nn.Module) -> list[int]:
    """The widths of ``module``'s linear layers but the last (its hidden layers)."""
    return [m.out_features for m in module.modules() if isinstance(m, nn.Linear)][:-1]


def _critic(model: nn.Module) -> nn.Module:
    """One critic network of a built-in model: the value MLP, or the first Q network of the ensemble."""
    critic = model.q if hasattr(model, "q") else model.critic
    critic = getattr(critic, "q", critic)  # ContinuousCritic: its ensemble
    return critic[0] if isinstance(critic, nn.ModuleList) else critic


def _algorithm(algo: str, **hparams) -> object:
    cls = lookup("algorithm", algo)
    spaces = DISCRETE if gym.spaces.Discrete in cls.action_spaces else BOX
    return cls(*spaces, cls.Config(**hparams), seed=0)


@pytest.mark.parametrize("algo", ON_POLICY + OFF_POLICY)
def test_actor_and_critic_get_the_widths_asked_for(algo):
    model = _algorithm(algo, net_arch=[8, 8], critic_net_arch=[24]).model
    assert _hidden(model.actor) == [8, 8] and _hidden(_critic(model)) == [24]
    if algo == "sac_discrete" or algo in OFF_POLICY[:5]:  # every Q network of the ensemble
        assert all(_hidden(q) == [24] for q in getattr(getattr(model, "critic", None), "q", getattr(model, "q", [])))
    default = _algorithm(algo, net_arch=[8, 8]).model  # null: the critic takes net_arch
    if algo in ("ppo", "a2c", "reinforce", "impala", "appo"):  # stacked: one [2, in, out] weight per layer
        assert default.stacked and [tuple(w.shape) for w in default.body.weights][:2] == [(2, 4, 8), (2, 8, 8)]
    else:
        assert _hidden(_critic(default)) == [8, 8]


def test_the_sb3_mapping_is_net_arch_and_critic_net_arch_in_every_layer_and_form():
    for algo, env, mapping in (("ppo", "CartPole-v1", {"pi": [32], "vf": [64, 64]}),
                               ("sac", "Pendulum-v1", {"pi": [32], "qf": [64, 64]})):
        for kw in (dict(net_arch=mapping), dict(hparams={"net_arch": mapping}),
                   dict(sets=[f"net_arch={json.dumps(mapping)}"]), dict(sets=[f"hparams.net_arch={mapping}"])):
            cfg = resolve_config(algo, env, **kw)[1]
            assert (cfg.net_arch, cfg.critic_net_arch) == ([32], [64, 64]), (algo, kw)
    # a later layer wins key by key, as for any hyperparameter; one layer giving the critic twice is refused
    cfg = resolve_config("ppo", "CartPole-v1", critic_net_arch=[8], sets=["net_arch={pi: [16], vf: [32]}"])[1]
    assert (cfg.net_arch, cfg.critic_net_arch) == ([16], [32])
    with pytest.raises(CanterError, match=r"^'net_arch' and 'critic_net_arch' both set 'hparams.critic_net_arch' in "
                                          r"arguments; give it once$"):
        resolve_config("ppo", "CartPole-v1", net_arch={"pi": [16], "vf": [32]}, critic_net_arch=[8])
    from canter.multiagent_config import policy_config

    run, cfg = resolve_config("ppo", MIXED, policies="type",
                              policy_hparams={"adversary": {"net_arch": {"pi": [16], "vf": [48]}}})
    adversary = policy_config(run, cfg, "adversary")
    assert (adversary.net_arch, adversary.critic_net_arch, cfg.critic_net_arch) == ([16], [48], None)


@pytest.mark.parametrize("argv, needle", [
    (["ppo", "--set", "net_arch={pi: [64], pj: [64]}"], "'hparams.net_arch' has an unknown key 'pj'; did you mean "
                                                        "'pi'? (Stable-Baselines3's dict(pi=[...], vf=[...])"),
    (["sac", "--env", "Pendulum-v1", "--set", "net_arch={pi: [64], vf: [64]}"], "unknown key 'vf'; did you mean 'qf'?"),
    (["ppo", "--set", "net_arch={pi: [64]}"], "'hparams.net_arch' as a mapping needs both pi and vf, vf is missing"),
    (["ppo", "--set", "net_arch={pi: [64], vf: [-5]}"], "'hparams.critic_net_arch' must be >= 1, got -5"),
    (["td3", "--env", "Pendulum-v1", "--set", "critic_net_arch=[64, 0]"], "'hparams.critic_net_arch' must be >= 1, "
                                                                          "got 0"),
    (["ppo", "--set", "critic_net_arch=[]"], "'hparams.critic_net_arch' needs at least one hidden layer"),
    (["ppo", "--set", "net_arch=[{pi: [64], vf: [64]}]"], "Stable-Baselines3's older list form"),
    (["ppo", "--set", "shared_trunk=true", "--set", "critic_net_arch=[128]"], "shared_trunk shares net_arch's hidden "
                                                                             "layers between actor and critic"),
    (["dqn", "--set", "net_arch={pi: [64], vf: [64]}"], "the actor-critic algorithms read it as net_arch and critic_net_arch"),
])
def test_bad_critic_widths_are_one_line_errors(capsys, tmp_path, argv, needle):
    env = [] if "--env" in argv else ["--env", "CartPole-v1"]
    assert_train_refused(capsys, tmp_path, ["train", *argv[:1], *env, *argv[1:]], needle)


def test_other_widths_make_two_mlps_and_equal_ones_stay_stacked():
    obs = torch.randn(5, 4)
    torch.manual_seed(0)
    stacked = PPO(*DISCRETE, PPOConfig(net_arch=[16], critic_net_arch=[16]), seed=0)
    torch.manual_seed(0)
    default = PPO(*DISCRETE, PPOConfig(net_arch=[16]), seed=0)
    assert stacked.model.stacked and stacked.uses_manual_backward  # the same widths named twice: the fast path
    sa, da = flatten_state(stacked.model.state_dict())[1], flatten_state(default.model.state_dict())[1]
    assert sa.keys() == da.keys() and all(torch.equal(sa[k], da[k]) for k in sa)
    apart = PPO(*DISCRETE, PPOConfig(net_arch=[16], critic_net_arch=[32]), seed=0)
    assert not apart.model.stacked and apart.uses_manual_backward and apart.act_numpy(obs.numpy()) is not None
    elu = PPO(*DISCRETE, PPOConfig(net_arch=[16], critic_net_arch=[32], activation="elu"), seed=0)
    assert not elu.uses_manual_backward and elu.act_numpy(obs.numpy()) is None  # no NumPy pass: autograd, torch
    out, value = apart.model.action_value(obs)
    torch.testing.assert_close(value, apart.model.critic(obs).squeeze(-1))
    torch.testing.assert_close(out, apart.model.actor(obs))
    assert widest_layer(apart.config) == 32 and widest_layer(PPOConfig(net_arch=[256], critic_net_arch=[8])) == 256


def test_threads_follow_the_widest_network(monkeypatch):
    import canter.agent_factory

    seen = []
    monkeypatch.setattr(canter.agent_factory, "threads_for", lambda width: seen.append(width) or 1)
    canter.make_trainer("ppo", "CartPole-v1", net_arch={"pi": [16], "vf": [300]}, max_steps=64, n_envs=1).close()
    assert seen == [300]


def test_a_checkpoint_round_trips_through_load_eval_play_and_init_from(capsys, tmp_path):
    run_dir = tmp_path / "run"
    agent = canter.train("ppo", "CartPole-v1", run_dir=run_dir, seed=1, max_steps=256,
                         net_arch={"pi": [16], "vf": [40, 24]}, **TINY_PPO)
    loaded = canter.load(run_dir)
    assert _hidden(loaded.algorithm.model.critic) == [40, 24] and _hidden(loaded.algorithm.model.actor) == [16]
    a, b = (flatten_state(x.algorithm.model.state_dict())[1] for x in (agent, loaded))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    obs = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
    np.testing.assert_array_equal(loaded.predict(obs), agent.predict(obs))
    for command in ("eval", "play"):
        code, _, err = run_cli(capsys, command, str(run_dir), "--episodes", "1")
        assert code == 0, err
    with canter.make_trainer("ppo", "CartPole-v1", init_from=str(run_dir), net_arch=[16], critic_net_arch=[40, 24],
                             max_steps=64) as trainer:
        np.testing.assert_array_equal(trainer.agent.predict(obs), agent.predict(obs))
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", f"init_from={run_dir}", "--set",
                           "net_arch=[16]", "--quiet", "--run-dir", str(tmp_path / "other"))
    assert_one_line_error(code, err, "differing: critic_net_arch [40, 24] there, None here")


def test_an_explorer_builds_the_learners_widths_and_loads_its_weights():
    """IMPALA's explorers (Ray actors; ExplorerActor is their body, built here in-process) make their agent from
    the run's config: the same two widths, so the learner's weights load."""
    from canter.distributed.explorer import ExplorerActor, explorer_weights

    with canter.make_trainer("impala", "CartPole-v1", seed=0, n_envs=2, max_steps=64,
                             net_arch={"pi": [16], "vf": [40]}) as trainer:
        learner = trainer.agent
        algorithm = learner.algorithm
        actor = ExplorerActor(0, 1, trainer.run, algorithm.config,
                              spaces=(algorithm.observation_space, algorithm.action_space))
        try:
            actor.rollout(explorer_weights(learner), version=1, n_steps=4)
            model = actor.explorer.agent.algorithm.model
            assert _hidden(model.critic) == [40] and _hidden(model.actor) == [16]
            for (name, a), b in zip(algorithm.model.state_dict().items(), model.state_dict().values()):
                assert torch.equal(a, b), name
        finally:
            actor.explorer.env.close()


@pytest.mark.parametrize("algo, env, kw", [
    ("ppo", "CartPole-v1", dict(TINY_PPO, net_arch={"pi": [16], "vf": [32]})),
    ("sac", "Pendulum-v1", dict(net_arch={"pi": [16], "qf": [32, 8]}, learning_starts=32, batch_size=16, n_envs=2,
                                eval_every=0, eval_episodes=1, quiet=True)),
])
def test_a_resumed_run_equals_the_uninterrupted_one(algo, env, kw, tmp_path):
    """tests/test_determinism.py's contract, with actor and critic of different widths."""
    steps = 512 if algo == "ppo" else 192
    whole = canter.train(algo, env, seed=5, max_steps=steps, run_dir=tmp_path / "whole", **kw)

    def interrupt(trainer, losses):
        if trainer.step >= steps // 2 and trainer.stop_requested is None:
            trainer.stop_requested = "interrupted"

    canter.train(algo, env, seed=5, max_steps=steps, run_dir=tmp_path / "part", hooks={"after_update": interrupt}, **kw)
    assert json.loads((tmp_path / "part" / "summary.json").read_text())["steps"] < steps
    resumed = canter.resume(tmp_path / "part")
    skeleton_a, a = flatten_state(whole.state_dict())
    skeleton_b, b = flatten_state(resumed.state_dict())
    assert skeleton_a == skeleton_b and a.keys() == b.keys()
    assert not [k for k in a if not torch.equal(a[k], b[k])]
    assert json.loads((tmp_path / "part" / "summary.json").read_text())["resume_exact"] is True


def test_ppo_learns_cartpole_with_a_wider_critic():
    """PPO's CartPole preset with pi [64, 64] and vf [128, 128] (two MLPs) reaches a return of 200."""
    trainer = canter.make_trainer("ppo", "CartPole-v1", seed=0, max_steps=16_384, eval_every=4096, eval_episodes=5,
                                  target_reward=200, net_arch={"pi": [64, 64], "vf": [128, 128]})
    with trainer:
        for _ in trainer():
            pass
    assert _hidden(trainer.agent.algorithm.model.critic) == [128, 128]
    assert trainer.best_eval_return >= 200, f"reached only {trainer.best_eval_return} in {trainer.step} steps"


@pytest.mark.slow
def test_sac_learns_pendulum_with_a_wider_critic():
    """tests/test_offpolicy_learning.py's fast Pendulum run with pi [64, 64] and qf [128, 128] reaches -300."""
    trainer = canter.make_trainer("sac", "Pendulum-v1", seed=1, learning_starts=100, target_reward=-300,
                                  eval_every=1000, eval_episodes=10, max_steps=15_000,
                                  net_arch={"pi": [64, 64], "qf": [128, 128]})
    with trainer:
        for _ in trainer():
            pass
    assert _hidden(_critic(trainer.agent.algorithm.model)) == [128, 128]
    assert trainer.best_eval_return >= -300, f"reached only {trainer.best_eval_return:.1f} in {trainer.step} steps"
