"""The registry: looking names up, registering user models, envs, agents and algorithms (by decorator,
by module path, by a config's imports), and runs that name them loading in a fresh process."""
import numpy as np
import pytest
import torch

import canter
from canter.config import resolve_config
from canter.errors import CanterError
from canter.registry import lookup, names, register
from support import run_python


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


def test_a_name_that_differs_only_in_case_from_a_taken_one_is_refused():
    """register('algorithm', 'PPO') was accepted beside canter's 'ppo': lookup('Ppo'), case-insensitive, then found the
    user's class, lookup('ppo') canter's, and a config saying algo: PPO passed for 'canter train ppo'."""
    from canter.registry import _REGISTRY

    for kind, name, twin in [("algorithm", "PPO", "ppo"), ("model", "MLP_Actor_Critic", "mlp_actor_critic")]:
        with pytest.raises(ValueError, match=f"{kind} '{name}' differs only in case from the registered '{twin}'"):
            register(kind, name)(type("X", (), {}))
        assert name not in _REGISTRY[kind]
    register("model", "test_case_model")(M := type("M", (), {}))
    register("model", "test_case_model")(M)  # the same object again (a reloaded module) stays allowed


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
    assert make_env("my_chain_envs:RegisteredChain-v0").unwrapped.n == 3  # (inside the eval cap's TimeLimit)
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
    with pytest.raises(CanterError, match="'my_plain_factory:PlainFactory-v0' cannot render: its registered factory "
                                          "my_plain_factory.make refused render_mode='rgb_array'"):
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
        "from canter.models.q_network import QNetwork\n"
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
                                          r"the class canter.algorithms.dqn.DQN; pass its registered name 'dqn'$"):
        canter.make_trainer(DQN, "CartPole-v1")  # was told to register the class, which is registered
    with pytest.raises(CanterError, match="model must be a registered name"):
        lookup("model", 3)
    with pytest.raises(CanterError, match=r"got the class torch.nn.modules.linear.Linear; register a class with "
                                          r"@canter.register\('model', 'name'\) and pass its name or "
                                          r"'torch.nn.modules.linear:Linear'$"):
        lookup("model", torch.nn.Linear)
    from canter.models.q_network import QNetwork

    with pytest.raises(CanterError, match=r"got the class canter.models.q_network.QNetwork; pass its registered name 'mlp_q'"):
        canter.make_trainer("dqn", "CartPole-v1", model=QNetwork)  # was "'model' must be a str or null, got <class"


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
        "from canter.models.q_network import QNetwork\n"
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


def test_user_name_taken_by_a_builtin_is_refused_before_builtins_load():
    """``import canter`` registers nothing: a user's ``register('algorithm', 'ppo')`` must still be refused at once,
    and leave canter's own algorithms all registered (was: accepted, then ``lookup`` raised inside canter's
    imports and every algorithm after ppo was unknown)."""
    code = ("import canter\n"
            "from canter.registry import _REGISTRY\n"
            "assert not _REGISTRY['algorithm']\n"
            "try:\n"
            "    canter.register('algorithm', 'ppo')(type('MyPPO', (), {}))\n"
            "except ValueError as exc:\n"
            "    print('refused', exc)\n"
            "print(canter.lookup('algorithm', 'ppo').__module__, canter.lookup('algorithm', 'sac').__module__)\n")
    out = run_python(code)
    assert out.returncode == 0, out.stderr
    assert "refused algorithm 'ppo' is already registered" in out.stdout
    assert "canter.algorithms.ppo canter.algorithms.sac" in out.stdout


def test_builtins_interrupted_while_loading_load_on_the_next_lookup():
    """A Ctrl-C while canter's own components import (the first lookup imports torch since ``import canter`` is
    lazy) must not leave the registry empty for good (was: every later lookup 'unknown algorithm')."""
    code = ("import canter, canter.registry as r\n"
            "orig, calls = canter._import_deferring_gc, []\n"
            "def flaky(*modules):\n"
            "    if not calls:\n"
            "        calls.append(1)\n"
            "        raise KeyboardInterrupt\n"
            "    return orig(*modules)\n"
            "canter._import_deferring_gc = flaky\n"
            "try:\n"
            "    r.lookup('algorithm', 'ppo')\n"
            "except KeyboardInterrupt:\n"
            "    print('interrupted')\n"
            "print(r.lookup('algorithm', 'ppo').__module__)\n")
    out = run_python(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["interrupted", "canter.algorithms.ppo"]


def test_a_module_that_exits_or_raises_as_it_imports_is_one_line(tmp_path, monkeypatch):
    """A module of ``imports`` (or a ``module:Class``, a ``module:EnvId``) that calls sys.exit() as it imports (a
    script's parse_args()) ended canter with its exit code and no word of canter's; a ``pettingzoo:MODULE`` that
    raised as it imported was a traceback (turns.aec_factory caught ImportError only)."""
    import sys

    from canter.envs.make import check_env_id

    (tmp_path / "exits_on_import.py").write_text("import sys\nsys.exit(3)\n")
    (tmp_path / "raises_on_import.py").write_text("raise ValueError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    exits = r"cannot import module 'exits_on_import'{}: SystemExit: 3 \(.*exits_on_import.py, line 2\); the module exits"
    try:
        with pytest.raises(CanterError, match=exits.format(r" \(imports\)")):
            resolve_config("ppo", "CartPole-v1", sets=["imports=[exits_on_import]"])
        with pytest.raises(CanterError, match=exits.format(r" \(from 'exits_on_import:X'\)")):
            lookup("model", "exits_on_import:X")
        with pytest.raises(CanterError, match=exits.format(" for env 'exits_on_import:X'")):
            check_env_id("exits_on_import:X")
        with pytest.raises(CanterError, match=r"cannot import module 'raises_on_import' for env 'pettingzoo:raises_on_"
                                              r"import': ValueError: boom \(.*raises_on_import.py, line 1\)$"):
            check_env_id("pettingzoo:raises_on_import")
    finally:
        sys.modules.pop("exits_on_import", None)
        sys.modules.pop("raises_on_import", None)


def test_a_user_model_gets_observations_in_the_spaces_dtype_from_predict(tmp_path, monkeypatch):
    """``predict([0.0, 0.0, 0.0, 0.0])`` (a list: float64) reached a user's model as a float64 tensor, where it
    trains on the env's float32: torch's 'mat1 and mat2 must have the same dtype' traceback (canter's own
    models cast inside their encoders). A Discrete observation given as 3.0 reached it as a float too."""
    _user_module(tmp_path, monkeypatch, "my_dtype_models", [
        "import torch", "from torch import nn", "class StrictQ(nn.Module):",
        "    def __init__(self, observation_space, action_space, **kw):", "        super().__init__()",
        "        self.space = observation_space",
        "        self.net = nn.Linear(getattr(observation_space, 'n', 0) or observation_space.shape[0], action_space.n)",
        "    def value(self, obs):", "        if obs.dtype != torch.float32:",
        "            assert obs.dtype == torch.int64, obs.dtype",
        "            obs = nn.functional.one_hot(obs, self.space.n).float()", "        return self.net(obs)"])
    with canter.make_trainer("dqn", "CartPole-v1", model="my_dtype_models:StrictQ", max_steps=64) as trainer:
        agent = trainer.agent
    for obs in ([0.0, 0.1, 0.0, 0.0], [[0, 0, 0, 0]], np.zeros(4), torch.zeros(4, dtype=torch.float64)):
        assert np.shape(agent.predict(obs)) == np.shape(obs)[:-1]
        agent.predict(obs, deterministic=False)
    with canter.make_trainer("dqn", "FrozenLake-v1", model="my_dtype_models:StrictQ", max_steps=64) as trainer:
        agent = trainer.agent
    assert np.shape(agent.predict(3.0)) == () and agent.predict([1.0, 2.0]).shape == (2,)


def test_a_user_model_for_box_actions_without_log_std_is_refused_when_built(tmp_path, monkeypatch):
    """PPO, A2C, TRPO, REINFORCE (and their kin) read the Gaussian's ``model.log_std`` for Box actions; a user's
    model with the methods they call but no log_std was built and failed in the first rollout with an
    AttributeError traceback."""
    _user_module(tmp_path, monkeypatch, "my_box_models", [
        "import torch", "from torch import nn", "class NoStd(nn.Module):",
        "    def __init__(self, observation_space, action_space, **kw):", "        super().__init__()",
        "        self.pi, self.v = nn.Linear(3, 1), nn.Linear(3, 1)", "    def action(self, obs):",
        "        return self.pi(obs)", "    def value(self, obs):", "        return self.v(obs).squeeze(-1)",
        "    def action_value(self, obs):", "        return self.action(obs), self.value(obs)",
        "class WithStd(NoStd):", "    def __init__(self, *a, **kw):", "        super().__init__(*a, **kw)",
        "        self.log_std = nn.Parameter(torch.zeros(1))"])
    for algo in ("ppo", "a2c"):
        with pytest.raises(CanterError, match=rf"{algo.upper()} needs a model with a 'log_std' parameter for Box "
                                              r"actions .* model my_box_models:NoStd has none$"):
            canter.make_trainer(algo, "Pendulum-v1", model="my_box_models:NoStd", max_steps=64)
    with canter.make_trainer("ppo", "Pendulum-v1", model="my_box_models:WithStd", max_steps=64, n_envs=1,
                             n_steps=32, eval_episodes=1) as trainer:
        next(trainer())


def test_a_user_model_that_refuses_the_model_keywords_is_told_which_to_take(tmp_path, monkeypatch):
    """A user's model whose __init__ did not take the algorithm's model keywords was 'cannot build model StrictQ
    for dqn: ... unexpected keyword argument 'activation'; dqn's default model is 'mlp_q'', which said nothing of
    what to change."""
    _user_module(tmp_path, monkeypatch, "my_strict_models", [
        "from torch import nn", "class StrictQ(nn.Module):",
        "    def __init__(self, observation_space, action_space, net_arch=(64,)):", "        super().__init__()",
        "        self.net = nn.Linear(4, 2)", "    def value(self, obs):", "        return self.net(obs)"])
    with pytest.raises(CanterError, match=r"cannot build model my_strict_models:StrictQ for dqn: .*'activation'; it "
                                          r"is built as Model\(observation_space, action_space, \*\*kwargs\) with "
                                          r"net_arch, activation, dueling: take them \(or \*\*kwargs\)$"):
        canter.make_trainer("dqn", "CartPole-v1", model="my_strict_models:StrictQ", max_steps=64)
