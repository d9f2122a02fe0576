"""Config composition and validation; the registry."""
import pytest
import torch

import canter
from canter.config import RunConfig, build, coerce, load_yaml, resolve_config
from canter.errors import CanterError
from canter.registry import lookup, names, register


def test_preset_is_used_and_overrides_compose(tmp_path):
    run, hp = resolve_config("ppo", "CartPole-v1")
    assert run.n_envs == 16 and hp.n_steps == 32 and run.target_reward == 475  # shipped preset
    f = tmp_path / "run.yaml"
    f.write_text("seed: 3\nhparams:\n  n_steps: 24\n  lr: 0.01\n")
    run, hp = resolve_config("ppo", "CartPole-v1", f, ["lr=0.02", "hparams.n_epochs=3", "max_steps=1e4"], seed=5)
    assert (run.seed, hp.n_steps, hp.lr, hp.n_epochs, run.max_steps) == (5, 24, 0.02, 3, 10000)


def test_a_module_prefixed_env_id_gets_the_env_ids_preset():
    """--env gymnasium:CartPole-v1 (gymnasium's module:EnvId form, which makes CartPole-v1) trained with PPO's
    bare defaults (n_steps 2048, no target reward) where --env CartPole-v1 uses configs/ppo/CartPole-v1.yaml;
    the Atari ids already got theirs (ale_py:ALE/Pong-v5)."""
    plain, prefixed = resolve_config("ppo", "CartPole-v1"), resolve_config("ppo", "gymnasium:CartPole-v1")
    assert (prefixed[0].n_envs, prefixed[0].target_reward, prefixed[1].n_steps) == (16, 475, 32)
    assert prefixed[1] == plain[1] and prefixed[0].env == "gymnasium:CartPole-v1"


def test_the_last_set_wins_over_an_alias_given_between():
    """--set lr=0.1 --set hparams.lr=0.5 --set lr=0.2 is lr 0.2 (the repeated key kept its first place, so the
    alias given between won: 0.5)."""
    _, hp = resolve_config("ppo", "CartPole-v1", sets=["lr=0.1", "hparams.lr=0.5", "lr=0.2"])
    assert hp.lr == 0.2
    _, hp = resolve_config("ppo", "CartPole-v1", sets=["hparams={n_steps: 8}", "n_steps=16", "hparams={n_steps: 32}"])
    assert hp.n_steps == 32


def test_a_config_file_may_name_its_algorithm_in_any_case(tmp_path):
    """'canter train PPO' finds ppo (lookup is case-insensitive), but a file saying 'algo: PPO' was refused for
    'canter train ppo' ("is for algorithm 'PPO', not 'ppo'"); another algorithm still is."""
    f = tmp_path / "run.yaml"
    f.write_text("algo: PPO\nseed: 4\n")
    assert resolve_config("ppo", "CartPole-v1", f)[0].seed == 4
    assert resolve_config("ppo", "CartPole-v1", sets=["algo=Ppo"])[0].algo == "ppo"
    f.write_text("algo: dqn\n")
    with pytest.raises(CanterError, match="is for algorithm 'dqn', not 'ppo'"):
        resolve_config("ppo", "CartPole-v1", f)


def test_a_files_empty_hparams_section_is_no_hyperparameters(tmp_path):
    """'hparams:' with every entry commented out is YAML null: it was refused as not a mapping."""
    f = tmp_path / "run.yaml"
    f.write_text("seed: 4\nhparams:\n  # lr: 0.01\n")
    run, hp = resolve_config("ppo", "CartPole-v1", f)
    assert run.seed == 4 and hp.lr == resolve_config("ppo", "CartPole-v1")[1].lr
    with pytest.raises(CanterError, match="'hparams' must be a mapping"):
        resolve_config("ppo", "CartPole-v1", sets=["hparams=3"])


def test_defaults_without_preset():
    run, hp = resolve_config("dqn", "MountainCar-v0")  # no shipped preset
    assert run.n_envs == 1 and hp.lr == 1e-4


@pytest.mark.parametrize("sets, fragment", [
    (["lrr=0.1"], "did you mean 'lr'"),
    (["hparams.n_step=4"], "hparams.n_steps"),
    (["lr=abc"], "'hparams.lr' must be a float"),
    (["lr=-1"], "'hparams.lr' must be > 0"),
    (["n_envs=0"], "'n_envs' must be >= 1"),
    (["gamma=1.5"], "'hparams.gamma' must be <= 1"),
    (["lr_schedule=linaer"], "did you mean 'linear'"),
    (["net_arch=[64, x]"], "net_arch"),
    (["novalue"], "key=value"),
    # a run key put under hparams is named as one (the closest hyperparameters, 'hparams.n_epochs'..., were offered)
    (["hparams.n_envs=4"], "'hparams.n_envs' is a run setting, not a hyperparameter of ppo: give it at the top level"),
    (["hparams={seed: 3}"], "'hparams.seed' is a run setting"),
])
def test_bad_values_name_the_key(sets, fragment):
    with pytest.raises(CanterError) as exc:
        resolve_config("ppo", "CartPole-v1", sets=sets)
    assert fragment in str(exc.value)


def test_qrdqn_needs_quantiles():
    """qrdqn --n-quantiles 0 trained plain DQN under QR-DQN's name (dqn and rainbow keep 0: plain Q values)."""
    with pytest.raises(CanterError, match="'hparams.n_quantiles' must be >= 1, got 0"):
        resolve_config("qrdqn", "CartPole-v1", sets=["n_quantiles=0"])
    assert resolve_config("rainbow", "CartPole-v1", sets=["n_quantiles=0"])[1].n_quantiles == 0


def test_coerce_types():
    assert coerce(int, "1e5", "k") == 100000
    assert coerce(list[int], "64,64", "k") == [64, 64]
    assert coerce(bool, "false", "k") is False
    assert coerce(float | None, "null", "k") is None
    with pytest.raises(CanterError):
        coerce(int, 1.5, "k")
    with pytest.raises(CanterError):
        coerce(int, True, "k")


def test_set_takes_the_bool_words_a_config_file_takes(tmp_path):
    """'tensorboard: off' in a file is false (YAML 1.1), but --set tensorboard=off and --normalize-obs on were
    refused ('must be a bool, got 'off'')."""
    f = tmp_path / "run.yaml"
    f.write_text("tensorboard: off\nhparams: {normalize_obs: on}\n")
    run, hp = resolve_config("ppo", "CartPole-v1", f)
    assert run.tensorboard is False and hp.normalize_obs is True
    run, hp = resolve_config("ppo", "CartPole-v1", sets=["tensorboard=off", "normalize_obs=On"])
    assert run.tensorboard is False and hp.normalize_obs is True
    with pytest.raises(CanterError, match="'tensorboard' must be a bool, got 'of'"):
        resolve_config("ppo", "CartPole-v1", sets=["tensorboard=of"])


def test_malformed_yaml_reports_line(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("seed: 1\nhparams:\n  lr: [1, 2\n  n_steps: 3\n")
    with pytest.raises(CanterError, match=r"line \d+"):
        load_yaml(f)


def test_unknown_names_suggest_close_matches():
    with pytest.raises(CanterError, match="did you mean 'ppo'"):
        lookup("algorithm", "ppo2")
    with pytest.raises(CanterError, match="mlp_q"):
        lookup("model", "mlp_qq")
    assert {"ppo", "dqn"} <= set(names("algorithm"))


def test_register_user_model_and_name_it_by_module_path(tmp_path, monkeypatch):
    mod = tmp_path / "my_models.py"
    mod.write_text(
        "import torch\n"
        "from canter.models import ActorCritic\n"
        "class Wide(ActorCritic):\n"
        "    def __init__(self, obs_space, act_space, **kw):\n"
        "        kw['net_arch'] = [32]\n"
        "        super().__init__(obs_space, act_space, **kw)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    trainer = canter.make_trainer("ppo", "CartPole-v1", model="my_models:Wide", max_steps=128, n_envs=2,
                                  n_steps=64, eval_every=0, eval_episodes=1)
    assert type(trainer.algorithm.model).__name__ == "Wide"
    assert trainer.algorithm.model.body.weights[0].shape[-1] == 32
    # a user's module may leave parameters out of a loss: torch's Adam (which skips them), not the flat one
    assert type(trainer.algorithm.optimizer) is torch.optim.Adam
    list(trainer())
    assert trainer.algorithm.updates > 0
    builtin = canter.make_trainer("ppo", "CartPole-v1", max_steps=128, n_envs=2, n_steps=64, eval_episodes=1)
    assert type(builtin.algorithm.optimizer).__name__ == "FlatAdam"
    with pytest.raises(CanterError, match="did you mean 'Wide'"):
        canter.make_trainer("ppo", "CartPole-v1", model="my_models:Wied")


def test_register_decorator_and_duplicates():
    @register("model", "test_only_model")
    class M:  # noqa: D401
        pass

    assert lookup("model", "test_only_model") is M
    with pytest.raises(ValueError):
        register("model", "test_only_model")(object)


def test_a_name_lookup_could_never_find_is_refused_at_registration():
    """@register("algorithm", "team:ppo") registered a class that 'canter train team:ppo' looked up as module
    'team' ('cannot import module 'team''); an empty name could not be given either. Envs are looked up by
    their whole id first, so an env name may hold ':'."""
    from canter.registry import _REGISTRY

    for kind, name in [("algorithm", "team:ppo"), ("model", "my:net"), ("encoder", ""), ("agent", " ")]:
        with pytest.raises(ValueError, match=f"cannot register {kind} '{name}': a name must be a non-empty string"):
            register(kind, name)(type("X", (), {}))
        assert name not in _REGISTRY[kind]


def test_a_registered_subclass_is_built_saved_and_loaded_as_itself(tmp_path):
    """@register("algorithm", "my_ppo") on a PPO subclass that keeps PPO's ``name`` class attribute: the run
    config said algo 'ppo', so PPO (with PPO's CartPole preset) was trained, saved and loaded instead."""
    from canter.algorithms.ppo import PPO

    @register("algorithm", "test_only_my_ppo")
    class MyPPO(PPO):  # noqa: D401
        """PPO under another name."""

    from canter.registry import _REGISTRY

    try:
        run, _ = resolve_config("test_only_my_ppo", "CartPole-v1")
        assert run.algo == "test_only_my_ppo" and run.n_envs == PPO.default_n_envs  # no ppo preset
        agent = canter.train("Test_Only_My_PPO", "CartPole-v1", run_dir=tmp_path / "run", max_steps=64, n_envs=2,
                             n_steps=32, eval_episodes=1)
        assert type(agent.algorithm) is MyPPO and agent.run_config.algo == "test_only_my_ppo"
        assert type(canter.load(tmp_path / "run").algorithm) is MyPPO
    finally:  # other tests go over every registered algorithm
        _REGISTRY["algorithm"].pop("test_only_my_ppo", None)


def test_build_rejects_unknown_keys():
    with pytest.raises(CanterError, match="did you mean 'seed'"):
        build(RunConfig, {"sed": 1})


def test_duplicate_yaml_keys_are_refused_with_their_line(tmp_path):
    """YAML mappings may not repeat a key; PyYAML silently keeps the last one, so 'lr' given twice
    (e.g. a line added at the end of a long file) would override the first without a word."""
    f = tmp_path / "run.yaml"
    f.write_text("seed: 1\nhparams:\n  lr: 0.01\n  n_steps: 8\n  lr: 0.5\n")
    with pytest.raises(CanterError, match=r"run.yaml line 5, column 3: duplicate key 'lr'"):
        load_yaml(f)
    f.write_text("seed: 1\nhparams: {lr: 0.01}\nseed: 2\n")
    with pytest.raises(CanterError, match=r"line 3, column 1: duplicate key 'seed'"):
        resolve_config("ppo", "CartPole-v1", f)
    f.write_text("a: {x: 1}\nb: {x: 2}\n")  # the same key in two mappings is fine
    assert load_yaml(f) == {"a": {"x": 1}, "b": {"x": 2}}


def test_a_recursive_alias_or_a_deep_nesting_is_one_line(tmp_path):
    """'env_kwargs: &a {x: *a}' (a mapping inside itself) and a few hundred nested lists were RecursionError
    tracebacks (in canter's value checks, and in PyYAML's parser)."""
    f = tmp_path / "run.yaml"
    for text in ["env_kwargs: &a {x: *a}\n", "env_kwargs: {x: " + "[" * 500 + "]" * 500 + "}\n"]:
        f.write_text(text)
        with pytest.raises(CanterError, match=r"run.yaml: collections nested more than 100 deep, or an alias"):
            resolve_config("ppo", "CartPole-v1", f)
    f.write_text("base: &b [64, 64]\n")  # an alias used twice is no recursion
    assert load_yaml(f) == {"base": [64, 64]}


def test_type_errors_read_as_english():
    with pytest.raises(CanterError, match="'seed' must be an int, got 'abc'"):
        build(RunConfig, {"seed": "abc"})


def test_set_reaches_every_key_of_the_config():
    """``--set`` has the highest precedence, for the env, a bare-list field and a whole hparams mapping."""
    run, cfg = resolve_config("ppo", None, sets=["env=Pendulum-v1", "hparams={lr: 0.002, n_epochs: 3}",
                                                 "callbacks=['canter.callbacks:StepBudget']"])
    assert run.env == "Pendulum-v1" and cfg.lr == 0.002 and cfg.n_epochs == 3
    assert run.callbacks == ["canter.callbacks:StepBudget"]
    assert resolve_config("ppo", "CartPole-v1", sets=["env=CartPole-v1"])[0].env == "CartPole-v1"
    with pytest.raises(CanterError, match="cannot change the algorithm"):
        resolve_config("ppo", "CartPole-v1", sets=["algo=dqn"])
    with pytest.raises(CanterError, match="disagree"):
        resolve_config("ppo", "CartPole-v1", sets=["env=Pendulum-v1"])


def test_env_module_path_imports_a_canter_registered_factory(tmp_path, monkeypatch):
    """``module:EnvId`` imports ``module`` first; the id it then names may be a factory the module
    registered with ``canter.register("env", ...)`` as well as a Gymnasium id (the error used to
    say "unknown env id 'MyChain-v0'; did you mean 'MyChain-v0'")."""
    (tmp_path / "my_chain_envs.py").write_text(
        "import gymnasium as gym\nimport numpy as np\nimport canter\n"
        "class Chain(gym.Env):\n"
        "    observation_space = gym.spaces.Box(0, 1, (3,), np.float32)\n"
        "    action_space = gym.spaces.Discrete(2)\n"
        "    def __init__(self, render_mode=None, n=3):\n"
        "        self.n = n\n"
        "    def reset(self, seed=None, options=None):\n"
        "        super().reset(seed=seed)\n"
        "        self.t = 0\n"
        "        return np.zeros(3, np.float32), {}\n"
        "    def step(self, a):\n"
        "        self.t += 1\n"
        "        return np.zeros(3, np.float32), float(a), False, self.t >= self.n, {}\n"
        "canter.register('env', 'RegisteredChain-v0')(Chain)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from canter.envs import make_env, make_vec_env

    env = make_vec_env("my_chain_envs:RegisteredChain-v0", 2, env_kwargs={"n": 4})
    try:
        assert env.num_envs == 2 and env.single_observation_space.shape == (3,)
    finally:
        env.close()
    assert make_env("my_chain_envs:RegisteredChain-v0").n == 3
    trainer = canter.make_trainer("ppo", "my_chain_envs:RegisteredChain-v0", max_steps=64, n_envs=2, n_steps=32,
                                  eval_every=0, eval_episodes=1)
    records = list(trainer())
    assert records[-1].step == 64 and records[-1].episodes
    trainer.close()


def test_a_registered_env_factory_without_render_mode_plays(tmp_path, monkeypatch):
    """Training and eval call an env factory with env_kwargs only; make_env (canter play) passed
    render_mode=None too, a TypeError traceback for a factory that takes no render_mode."""
    (tmp_path / "my_plain_factory.py").write_text(
        "import gymnasium as gym\nimport canter\n"
        "@canter.register('env', 'PlainFactory-v0')\n"
        "def make(max_episode_steps=5):\n"
        "    return gym.make('CartPole-v1', max_episode_steps=max_episode_steps)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from canter.envs import make_env

    env = make_env("my_plain_factory:PlainFactory-v0", max_episode_steps=3)
    env.reset(seed=0)
    assert [env.step(0)[3] for _ in range(3)][-1]  # truncated at its 3 steps
    env.close()
    with pytest.raises(CanterError, match="cannot make env 'my_plain_factory:PlainFactory-v0' \\(render_mode='rgb_array'"):
        make_env("my_plain_factory:PlainFactory-v0", render_mode="rgb_array")


def test_a_run_naming_registered_user_parts_loads_in_a_process_that_never_imported_them(tmp_path, monkeypatch):
    """A run whose config names a model and an agent by the names a user's module registered them under
    trained (the module was imported), but loading it in a fresh process (canter.load, canter eval) failed
    with "unknown model 'tiny_q_test'": nothing recorded which module registers the names."""
    import json
    import sys

    from canter.registry import _REGISTRY

    (tmp_path / "my_registered_parts.py").write_text(
        "import canter\n"
        "from canter.agents.agent import Agent\n"
        "from canter.models.mlp import QNetwork\n"
        "@canter.register('model', 'tiny_q_test')\n"
        "class TinyQ(QNetwork):\n"
        "    pass\n"
        "@canter.register('agent', 'my_agent_test')\n"
        "class MyAgent(Agent):\n"
        "    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import my_registered_parts  # noqa: F401

    def forget() -> None:  # as a fresh process: the module not imported, its names not registered
        sys.modules.pop("my_registered_parts", None)
        _REGISTRY["model"].pop("tiny_q_test", None)
        _REGISTRY["agent"].pop("my_agent_test", None)

    try:
        canter.train("dqn", "CartPole-v1", run_dir=tmp_path / "run", model="tiny_q_test", agent="my_agent_test",
                     max_steps=200, learning_starts=50, eval_every=0, eval_episodes=1)
        forget()
        agent = canter.load(tmp_path / "run")
        assert type(agent).__name__ == "MyAgent" and type(agent.algorithm.q).__name__ == "TinyQ"
        meta = json.loads((tmp_path / "run" / "checkpoints" / "last.json").read_text())
        assert meta["user_modules"] == ["my_registered_parts"]
        forget()
        (tmp_path / "my_registered_parts.py").unlink()
        with pytest.raises(CanterError, match="cannot import module 'my_registered_parts', which registered"):
            canter.load(tmp_path / "run")
    finally:
        forget()


def test_a_class_object_in_place_of_a_name_is_a_one_line_error():
    """``canter.make_trainer(MyDQN, ...)`` (the class, not its name) raised 'TypeError: argument of type
    'ABCMeta' is not iterable' from inside the registry."""
    from canter.algorithms.dqn import DQN

    with pytest.raises(CanterError, match=r"algorithm must be a registered name or a 'module:Class' string, got "
                                          r"the class canter.algorithms.dqn.DQN"):
        canter.make_trainer(DQN, "CartPole-v1")
    with pytest.raises(CanterError, match="model must be a registered name"):
        lookup("model", 3)


def _user_module(tmp_path, monkeypatch, name: str, lines: list[str]) -> None:
    """Write module ``name`` (its source ``lines``) where the test's imports find it."""
    (tmp_path / f"{name}.py").write_text("\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))


def test_a_user_agent_that_cannot_be_built_is_a_one_line_error(tmp_path, monkeypatch):
    """A custom Agent whose __init__ does not take Agent's keyword arguments, or raises, ended the CLI with
    a traceback (a model gets "cannot build model ..."; the agent got nothing)."""
    _user_module(tmp_path, monkeypatch, "my_bad_agents", [
        "from canter.agents.agent import Agent", "class Strict(Agent):", "    def __init__(self, algorithm):",
        "        super().__init__(algorithm)", "class Broken(Agent):", "    def __init__(self, algorithm, **kw):",
        "        raise ValueError('my agent is broken')"])
    with pytest.raises(CanterError, match=r"cannot build agent my_bad_agents:Strict: .*unexpected keyword argument "
                                          r"'normalize_obs' \(an Agent subclass's __init__ takes"):
        canter.make_trainer("ppo", "CartPole-v1", agent="my_bad_agents:Strict", max_steps=64)
    with pytest.raises(CanterError, match=r"cannot build agent my_bad_agents:Broken: ValueError: my agent is broken "
                                          r"\(.*my_bad_agents.py, line 7\)"):
        canter.make_trainer("ppo", "CartPole-v1", agent="my_bad_agents:Broken", max_steps=64)


def test_a_user_model_without_the_methods_the_algorithm_calls_is_refused_when_built(tmp_path, monkeypatch):
    """A user's model lacking a method the algorithm calls (QR-DQN's quantiles, PPO's action_value) was
    built and then failed inside training with an AttributeError traceback."""
    _user_module(tmp_path, monkeypatch, "my_plain_models", [
        "import torch", "from torch import nn", "class PlainQ(nn.Module):",
        "    def __init__(self, observation_space, action_space, **kw):", "        super().__init__()",
        "        self.net = nn.Linear(4, int(action_space.n))", "    def value(self, obs):",
        "        return self.net(obs.float())", "class Empty(nn.Module):",
        "    def __init__(self, observation_space, action_space, **kw):", "        super().__init__()",
        "        self.w = nn.Parameter(torch.zeros(1))"])
    with pytest.raises(CanterError, match=r"QRDQN needs a model with the methods value, quantiles; model "
                                          r"my_plain_models:PlainQ has no quantiles"):
        canter.make_trainer("qrdqn", "CartPole-v1", model="my_plain_models:PlainQ", max_steps=64)
    with pytest.raises(CanterError, match=r"PPO needs a model .* has no action, action_value"):
        canter.make_trainer("ppo", "CartPole-v1", model="my_plain_models:PlainQ", max_steps=64)
    trainer = canter.make_trainer("dqn", "CartPole-v1", model="my_plain_models:PlainQ", max_steps=64,
                                  learning_starts=16)  # all it needs
    trainer.close()
    # TD3 / SAC / ACER declared nothing: an AttributeError traceback from their constructors
    for algo, env, missing in (("td3", "Pendulum-v1", "actor, critic"), ("sac", "Pendulum-v1", "actor, critic"),
                               ("acer", "CartPole-v1", "action, value, action_q")):
        with pytest.raises(CanterError, match=rf"{algo.upper()} needs a model .* has no {missing}$"):
            canter.make_trainer(algo, env, model="my_plain_models:Empty", max_steps=64)


def test_imports_register_user_components_for_the_cli_and_loading(tmp_path, monkeypatch, capsys):
    """``imports`` in a YAML config (or ``--set imports=[...]``) imports the user's modules before names are
    looked up, so ``canter train NAME`` works for an algorithm or model registered there (it was 'unknown
    algorithm': nothing imported user modules), its hyperparameters are flags, and the run loads again."""
    import sys

    from canter.cli import main
    from canter.registry import _REGISTRY

    (tmp_path / "my_imported_parts.py").write_text(
        "import canter\n"
        "from canter.algorithms.dqn import DQN\n"
        "from canter.models.mlp import QNetwork\n"
        "@canter.register('algorithm', 'imported_dqn_test')\n"
        "class ImportedDQN(DQN):\n"
        "    '''DQN under another name.'''\n"
        "@canter.register('model', 'imported_q_test')\n"
        "class ImportedQ(QNetwork):\n"
        "    '''A Q-network under another name.'''\n"
    )
    (tmp_path / "run.yaml").write_text("imports: [my_imported_parts]\nmodel: imported_q_test\nmax_steps: 128\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def forget() -> None:  # as a fresh process
        sys.modules.pop("my_imported_parts", None)
        _REGISTRY["algorithm"].pop("imported_dqn_test", None)
        _REGISTRY["model"].pop("imported_q_test", None)

    try:
        forget()
        run = tmp_path / "run"
        assert main(["train", "imported_dqn_test", "--env", "CartPole-v1", "-f", str(tmp_path / "run.yaml"),
                     "--lr", "0.002", "--quiet", "--run-dir", str(run)]) == 0
        forget()
        agent = canter.load(run)
        assert type(agent.algorithm).__name__ == "ImportedDQN" and type(agent.algorithm.q).__name__ == "ImportedQ"
        assert agent.algorithm.config.lr == 0.002
        forget()
        assert main(["train", "imported_dqn_test", "--env", "CartPole-v1", "--set", "imports=[my_imported_parts]",
                     "--max-steps", "64", "--quiet", "--run-dir", str(tmp_path / "run2")]) == 0
        capsys.readouterr()
        assert main(["train", "dqn", "--env", "CartPole-v1", "--set", "imports=[no_such_module_here]",
                     "--run-dir", str(tmp_path / "run3")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == ["canter: error: cannot import module 'no_such_module_here' (imports): No module named "
                       "'no_such_module_here'"]
        assert not (tmp_path / "run3").exists()
    finally:
        forget()


def test_make_trainer_with_imports_finds_the_algorithm_they_register(tmp_path, monkeypatch):
    """``canter.make_trainer(NAME, imports=[module], lr=...)`` (and so ``canter benchmark --jobs N``, whose
    worker processes train through it) looked NAME up to sort the keyword arguments before the imports were
    imported: 'unknown algorithm' in a fresh process."""
    import sys

    from canter.registry import _REGISTRY

    (tmp_path / "api_imported_algo.py").write_text(
        "import canter\nfrom dataclasses import dataclass\nfrom canter.algorithms.ppo import PPO, PPOConfig\n"
        "from canter.config import hp\n"
        "@dataclass\nclass KnobConfig(PPOConfig):\n    knob: float = hp(0.5, 'a user hyperparameter')\n"
        "@canter.register('algorithm', 'api_imported_ppo_test')\nclass KnobPPO(PPO):\n    Config = KnobConfig\n")
    (tmp_path / "knob.yaml").write_text("imports: [api_imported_algo]\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def forget() -> None:  # as a fresh process
        sys.modules.pop("api_imported_algo", None)
        _REGISTRY["algorithm"].pop("api_imported_ppo_test", None)

    try:
        for kw in ({"imports": ["api_imported_algo"]}, {"config_file": str(tmp_path / "knob.yaml")},
                   {"sets": ["imports=[api_imported_algo]"]}):
            forget()
            trainer = canter.make_trainer("api_imported_ppo_test", "CartPole-v1", knob=0.25, n_steps=32, **kw)
            assert type(trainer.algorithm).__name__ == "KnobPPO" and trainer.algorithm.config.knob == 0.25
            trainer.close()
    finally:
        forget()


def test_no_shipped_preset_logs_more_than_100k_records():
    """The loggers keep every record's row in memory and rewrite updates.parquet at each flush (and
    TensorBoard takes ~300 bytes a record): DQN's and Rainbow's Atari presets logged every 4-step
    iteration, 2.5 and 12.5 million rows over their budgets, SAC's MuJoCo presets a million. Each
    preset's log_every keeps its budget at 100,000 logged records or fewer."""
    from pathlib import Path

    for path in sorted((Path(canter.__file__).parent / "configs").glob("*/*.yaml")):
        env = {"atari": "ALE/Pong-v5", "ALE-Pong-v5": "ALE/Pong-v5"}.get(path.stem, path.stem)
        run, hp = resolve_config(path.parent.name, env)
        per_iteration = run.n_envs * (getattr(hp, "n_steps", None) or getattr(hp, "train_freq", None) or 1)
        assert run.max_steps / (per_iteration * run.log_every) <= 100_000, path


def test_every_shipped_preset_resolves():
    """Each ``canter/configs/ALGO/ENV.yaml`` is valid for its algorithm (keys, types, ranges, cross-field
    checks); ``atari.yaml`` is checked through an ALE id."""
    from pathlib import Path

    root = Path(canter.__file__).parent / "configs"
    files = sorted(root.glob("*/*.yaml"))
    assert len(files) > 30
    for path in files:
        env = {"atari": "ALE/Pong-v5", "ALE-Pong-v5": "ALE/Pong-v5"}.get(path.stem, path.stem)
        run, hp = resolve_config(path.parent.name, env)
        assert run.algo == path.parent.name, path


def test_exponent_floats_without_a_dot_are_numbers_in_free_form_values(tmp_path):
    """PyYAML's YAML 1.1 rules read ``1e1`` and ``2.5e-3`` (no dot / no exponent sign) as strings: typed fields
    converted them, but ``env_kwargs`` passed ``{'g': '1e1'}`` to Pendulum, whose first step raised a TypeError."""
    from canter.cli import parse_env_kwargs

    f = tmp_path / "run.yaml"
    f.write_text("env_kwargs: {g: 1e1}\nhparams:\n  lr: 2.5e-3\n")
    run, hp = resolve_config("ppo", "Pendulum-v1", f)
    assert run.env_kwargs == {"g": 10.0} and isinstance(run.env_kwargs["g"], float) and hp.lr == 0.0025
    run, _ = resolve_config("ppo", "Pendulum-v1", sets=["env_kwargs={g: 2e1}"])
    assert run.env_kwargs == {"g": 20.0}
    assert parse_env_kwargs("{g: 1E-1}") == {"g": 0.1}
    from canter.yaml_io import dump_yaml, safe_load

    data = {"a": "1e5", "b": 1e5, "c": "x"}  # a string that looks like such a number is quoted in config.yaml
    assert safe_load(dump_yaml(data)) == data


def test_a_hyperparameter_given_twice_in_one_file_is_refused(tmp_path):
    """'lr: 0.1' and 'hparams: {lr: 0.2}' in one file kept whichever came last (0.2 here, 0.1 with the lines
    swapped), as a repeated YAML key would, which is refused; a repeated --set still wins as documented."""
    f = tmp_path / "run.yaml"
    f.write_text("lr: 0.1\nhparams:\n  lr: 0.2\n")
    with pytest.raises(CanterError, match=r"'lr' and 'hparams: \{lr: ...\}' both set 'hparams.lr' in .*run.yaml"):
        resolve_config("ppo", "CartPole-v1", f)
    f.write_text("hparams.gamma: 0.9\ngamma: 0.8\n")
    with pytest.raises(CanterError, match="'hparams.gamma' and 'gamma' both set"):
        resolve_config("ppo", "CartPole-v1", f)
    f.write_text("lr: 0.1\n")  # the file, a flag and --set are layers: each may override the one before
    _, hp = resolve_config("ppo", "CartPole-v1", f, ["hparams.lr=0.3", "lr=0.4"], hparams={"lr": 0.2})
    assert hp.lr == 0.4


def test_stable_baselines3_names_point_to_canters(capsys):
    """learning_rate was answered "did you mean 'clip_range'" (PPO) or "'learning_starts'" (DQN, a step count),
    and n_timesteps "did you mean 'n_steps'" (PPO's rollout length): the closest spellings, not the settings."""
    from canter.cli import main

    with pytest.raises(CanterError, match=r"unknown config key 'learning_rate'; canter calls it 'hparams.lr'"):
        resolve_config("dqn", "CartPole-v1", sets=["learning_rate=0.001"])
    with pytest.raises(CanterError, match=r"'hparams.learning_rate'; canter calls it 'hparams.lr'"):
        resolve_config("ppo", "CartPole-v1", sets=["hparams={learning_rate: 0.001}"])
    with pytest.raises(CanterError, match=r"'n_timesteps'; canter calls it 'max_steps'"):
        resolve_config("ppo", "CartPole-v1", sets=["n_timesteps=1e5"])
    assert main(["train", "ppo", "--env", "CartPole-v1", "--learning-rate", "0.001"]) == 2
    assert capsys.readouterr().err.strip().endswith("did you mean '--lr'?")
