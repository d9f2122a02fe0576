"""User modules, models and memory: a module that fails to import, a model that raises, is made for another
algorithm or is too large, and buffers or rollouts too big for memory: one ``canter: error:`` line (exit 2)
naming the cause, and nothing half-written."""
from __future__ import annotations

import pytest

from support import assert_one_line_error, run_cli, snapshot


@pytest.mark.parametrize("source,needles", [
    ("x = (\n", ["SyntaxError", "line 1"]),
    ("import os\nraise RuntimeError('broken at import')\n", ["RuntimeError: broken at import", "line 2"]),
    ("undefined_name\n", ["NameError", "line 1"]),
    ("import json\nCONFIG = json.loads('{not json')\n", ["JSONDecodeError", "line 2"]),  # a ValueError
], ids=["syntax-error", "raises", "name-error", "value-error"])
@pytest.mark.parametrize("where", ["algorithm", "model", "env"])
def test_user_module_that_fails_to_import_is_one_line(capsys, workdir, monkeypatch, request, source, needles, where):
    """'module:Class' whose module fails with something other than ImportError (a SyntaxError...) was a
    traceback; the line names the module, the exception and where it was raised."""
    name = "broken_" + request.node.callspec.id.replace("-", "_")
    (workdir / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(workdir))
    argv = {"algorithm": ["train", f"{name}:Algo", "--env", "CartPole-v1"],
            "model": ["train", "ppo", "--env", "CartPole-v1", "--set", f"model={name}:Model"],
            "env": ["train", "ppo", "--env", f"{name}:Env-v0"]}[where]
    before = snapshot(workdir)
    code, _, err = run_cli(capsys, *argv, "--quiet", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, f"cannot import module '{name}'", f"{name}.py", *needles)
    assert {k: v for k, v in snapshot(workdir).items() if "__pycache__" not in k} == before


def test_user_model_that_raises_in_init_is_one_line(capsys, workdir, monkeypatch):
    """--set model=module:Class whose __init__ raises (not a TypeError: its signature is right) was a traceback."""
    (workdir / "raising_model.py").write_text(
        "import torch\n\n\nclass Model(torch.nn.Module):\n    def __init__(self, obs_space, action_space, **kw):\n"
        "        super().__init__()\n        raise ValueError('hidden sizes must be even')\n")
    monkeypatch.syspath_prepend(str(workdir))
    before = snapshot(workdir)
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", "model=raising_model:Model",
                           "--quiet", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "cannot build model raising_model:Model", "ValueError: hidden sizes must be even",
                          "raising_model.py, line 7")
    assert {k: v for k, v in snapshot(workdir).items() if "__pycache__" not in k} == before


def test_user_algorithm_that_raises_in_init_or_refuses_its_arguments_is_one_line(capsys, workdir, monkeypatch):
    """A user's algorithm (``module:Class``) whose __init__ raised, or did not take the keyword arguments it is
    built with, was a traceback, where a model, an encoder, an agent or a callback that did so is one line."""
    (workdir / "raising_algo.py").write_text(
        "from canter.algorithms.ppo import PPO\n\n\nclass Algo(PPO):\n    def __init__(self, *args, **kw):\n"
        "        raise ValueError('needs a wider net')\n\n\nclass Narrow(PPO):\n"
        "    def __init__(self, observation_space, action_space, config):\n"
        "        super().__init__(observation_space, action_space, config)\n")
    monkeypatch.syspath_prepend(str(workdir))
    before = snapshot(workdir)
    for name, needles in (("Algo", ["ValueError: needs a wider net", "raising_algo.py, line 6"]),
                          ("Narrow", ["unexpected keyword argument 'model'",
                                      "the keyword arguments model, seed and device: pass them on with **kwargs"])):
        code, _, err = run_cli(capsys, "train", f"raising_algo:{name}", "--env", "CartPole-v1", "--quiet",
                               "--run-dir", str(workdir / "run"))
        assert_one_line_error(code, err, f"cannot build algorithm raising_algo:{name}: ", *needles)
        assert {k: v for k, v in snapshot(workdir).items() if "__pycache__" not in k} == before


@pytest.mark.parametrize("body,needles", [
    ("    family = 'onpolicy'\n", ["has family 'onpolicy', which no trainer runs; did you mean 'on_policy'"]),
    ("    family = ''\n", ["has family '', which no trainer runs; choices: async, off_policy, offline, on_policy,"]),
    ("    Config = None\n", ["has no Config dataclass (Config = None): an Algorithm subclass sets Config"]),
    ("    def act(self, obs, deterministic=False): ...\n    def learn(self, batch): ...\n",
     ["has no Config dataclass"]),  # an Algorithm subclass that never set one
    ("    @dataclasses.dataclass\n    class Config:\n        lr: float = 0.001\n",
     ["has no hyperparameter n_steps, gamma, gae_lambda, which the on_policy trainer reads: declare them"]),
    ("    @dataclasses.dataclass(kw_only=True)\n    class Config(PPO.Config):\n        must: float\n",
     ["has no default for hyperparameter 'must' of its Config: every hyperparameter needs one"]),  # was a TypeError
    ("    @dataclasses.dataclass\n    class Config(PPO.Config):\n        widths: tuple = (64, 64)\n",
     ["has hyperparameter 'widths' of type tuple, which a config cannot give"]),  # --set gave it '[32, 32]', a str
], ids=["family-typo", "no-family", "config-none", "no-config", "no-rollout-fields", "no-default", "tuple-field"])
@pytest.mark.parametrize("how", ["train", "help", "list"])
def test_user_algorithm_without_a_family_or_config_is_one_line(capsys, workdir, monkeypatch, request, body, needles,
                                                               how):
    """A user's algorithm whose family no trainer runs was told it 'cannot run on explorers' (none were asked for);
    one without a Config dataclass was an AttributeError traceback from building train's flags, and one whose
    Config lacks what its family's trainer reads (n_steps) an AttributeError traceback from the trainer."""
    import sys

    from canter.registry import _REGISTRY

    name = "odd_" + request.node.callspec.id.replace("-", "_")
    base = "PPO" if "Config" in body or "family" in body else "Algorithm"
    (workdir / f"{name}.py").write_text(
        "import dataclasses\nimport canter\nfrom canter.algorithms.ppo import PPO\n"
        "from canter.algorithms.base import Algorithm\n\n\n"
        f"@canter.register('algorithm', '{name}')\nclass Odd({base}):\n{body}")
    monkeypatch.syspath_prepend(str(workdir))
    request.addfinalizer(lambda: sys.modules.pop(name, None))  # the module and its registration: this test's only
    monkeypatch.setitem(_REGISTRY, "algorithm", dict(_REGISTRY["algorithm"]))
    argv = {"train": ["train", f"{name}:Odd", "--env", "CartPole-v1", "--quiet", "--run-dir", str(workdir / "run")],
            "help": ["train", f"{name}:Odd", "--help"], "list": ["list", "--import", name]}[how]
    before = snapshot(workdir)
    code, _, err = run_cli(capsys, *argv)
    assert_one_line_error(code, err, f"algorithm '{name}", *needles)
    assert {k: v for k, v in snapshot(workdir).items() if "__pycache__" not in k} == before


def test_user_algorithm_left_abstract_is_one_line(capsys, workdir, monkeypatch):
    """An Algorithm subclass without modules() and optimizers(): Python's "Can't instantiate abstract class", and no
    hint about __init__'s arguments (the call's TypeError is not about them)."""
    (workdir / "abstract_algo.py").write_text(
        "from dataclasses import dataclass\nfrom canter.algorithms.base import Algorithm\n\n\n@dataclass\n"
        "class C:\n    n_steps: int = 8\n    gamma: float = 0.99\n    gae_lambda: float = 0.95\n\n\nclass Abstract(Algorithm):\n    Config = C\n    family = 'on_policy'\n")
    monkeypatch.syspath_prepend(str(workdir))
    code, _, err = run_cli(capsys, "train", "abstract_algo:Abstract", "--env", "CartPole-v1", "--quiet",
                           "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "cannot build algorithm abstract_algo:Abstract: Can't instantiate abstract class")
    assert "**kwargs" not in err


@pytest.mark.parametrize("encoder,needles", [
    ("flatt", ["canter: error: unknown encoder 'flatt'; did you mean 'flat'?"]),
    ("encoding_model:Nope", ["canter: error: unknown name in module 'encoding_model' 'Nope'; choices: Model, "
                             "make_encoder"]),
], ids=["registered-name", "module-attribute"])
def test_a_bad_encoder_name_a_user_model_builds_is_the_encoders_line(capsys, workdir, monkeypatch, encoder, needles):
    """A user's model that builds the configured encoder (make_encoder) with a name that does not exist was
    'cannot build model encoding_model:Model: CanterError: unknown encoder ... (encoding_model.py, line 9)', and a
    module's attributes were offered with the modules it imports (choices: Model, make_encoder, nn, torch)."""
    (workdir / "encoding_model.py").write_text(
        "import torch\nfrom torch import nn\nfrom canter.models.cnn import make_encoder\n\n\n"
        "class Model(nn.Module):\n    def __init__(self, observation_space, action_space, encoder='auto', **kw):\n"
        "        super().__init__()\n        self.enc = make_encoder(observation_space, encoder)\n")
    monkeypatch.syspath_prepend(str(workdir))
    code, _, err = run_cli(capsys, "train", "dqn", "--env", "CartPole-v1", "--set", "model=encoding_model:Model",
                           "--set", f"encoder={encoder}", "--quiet", "--run-dir", str(workdir / "run"))
    line = assert_one_line_error(code, err, *needles)
    assert "cannot build model" not in line and "torch" not in line
    assert not (workdir / "run").exists()


@pytest.mark.parametrize("algo,env", [("dqn", "CartPole-v1"), ("sac", "Pendulum-v1")])
def test_user_encoder_that_cannot_be_built_is_named(capsys, workdir, monkeypatch, algo, env):
    """--set encoder=module:Class whose __init__ refused ortho_init was 'cannot build model QNetwork for dqn: ...;
    dqn's default model is mlp_q', naming the wrong part, and one that raised was a traceback."""
    (workdir / "my_encoders.py").write_text(
        "import torch\n\n\nclass Strict(torch.nn.Module):\n    def __init__(self, space):\n        super().__init__()\n"
        "\n\nclass Raising(torch.nn.Module):\n    def __init__(self, space, ortho_init=False):\n"
        "        raise ValueError('needs images')\n")
    monkeypatch.syspath_prepend(str(workdir))
    for name, needles in (("Strict", ["unexpected keyword argument 'ortho_init'",
                                      "an encoder is built as Encoder(observation_space, ortho_init=...)"]),
                          ("Raising", ["ValueError: needs images", "my_encoders.py, line 11"])):
        code, _, err = run_cli(capsys, "train", algo, "--env", env, "--set", f"encoder=my_encoders:{name}",
                               "--quiet", "--run-dir", str(workdir / "run"))
        assert_one_line_error(code, err, f"cannot build encoder 'my_encoders:{name}': ", *needles)
        assert not (workdir / "run").exists()


@pytest.mark.parametrize("n_steps", ["100000000000", "1e18"])
def test_rollout_buffer_too_big_for_memory_is_one_line(capsys, workdir, n_steps):
    """torch's allocator failure was a RuntimeError traceback with C++ frames (the replay buffer's was one line),
    and so was its size calculation's overflow (n_steps 1e18 x 2 envs x 4 floats: 'Storage size calculation
    overflowed')."""
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--n-envs", "2", "--max-steps", "256",
                           "--set", f"n_steps={n_steps}", "--quiet", "--run-dir", str(workdir / "run"))
    lines = [ln for ln in err.splitlines() if not ln.startswith("canter: warning:")]  # max_steps < one rollout
    assert_one_line_error(code, "\n".join(lines), "rollout buffer does not fit in memory", "hparams.n_steps")
    assert not (workdir / "run").exists() or not any((workdir / "run").iterdir())


def test_model_past_a_64_bit_byte_count_is_one_line(capsys, workdir):
    """QR-DQN's head of n_quantiles 1e18 x 2 actions: torch's size calculation overflowed, a RuntimeError traceback
    (its allocator's failure was already one line)."""
    code, _, err = run_cli(capsys, "train", "dqn", "--env", "CartPole-v1", "--max-steps", "256",
                           "--set", "n_quantiles=1e18", "--quiet", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "cannot build model QuantileQNetwork for dqn: one of its tensors needs more "
                          "bytes than 64 bits count", "n_quantiles=1000000000000000000")


def test_replay_buffer_past_numpys_size_limit_is_one_line(capsys, workdir):
    """DQN's replay buffer of 1e18 transitions: NumPy's size limit ('array is too big') is a ValueError, which was a
    traceback (the buffer's MemoryError alone was one line)."""
    code, _, err = run_cli(capsys, "train", "dqn", "--env", "CartPole-v1", "--max-steps", "256", "--set",
                           "learning_starts=64", "--set", "buffer_size=1e18", "--quiet", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "replay buffer does not fit in memory (array is too big", "hparams.buffer_size")
    assert not (workdir / "run").exists() or not any((workdir / "run").iterdir())


def test_replay_buffer_too_big_for_its_n_step_names_n_step(capsys, workdir):
    """dqn --set n_step=1e18: the n-step buffer's arrays did not fit, and the line said only 'lower
    hparams.buffer_size (it is 100000)', a setting that was not the cause."""
    code, _, err = run_cli(capsys, "train", "dqn", "--env", "CartPole-v1", "--max-steps", "256", "--set",
                           "learning_starts=64", "--set", "n_step=1e18", "--quiet", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "replay buffer does not fit in memory", "or hparams.n_step (it is "
                          "1000000000000000000)")


@pytest.mark.parametrize("buffer_size", ["1000000000000", "1e18"])
def test_acer_segment_replay_too_big_for_memory_is_one_line(capsys, workdir, buffer_size):
    """ACER's segment replay: torch's allocator failure (or its size overflow) was a RuntimeError traceback."""
    code, _, err = run_cli(capsys, "train", "acer", "--env", "CartPole-v1", "--n-envs", "2", "--max-steps", "256",
                           "--set", f"buffer_size={buffer_size}", "--quiet", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "segment replay does not fit in memory", "hparams.buffer_size")
    assert not (workdir / "run").exists() or not any((workdir / "run").iterdir())
    # a buffer_size of one segment (one below it is refused before, since 2fc57b8e): told '1 segment', not '1 segments'
    code, _, err = run_cli(capsys, "train", "acer", "--env", "CartPole-v1", "--n-envs", "2", "--max-steps", "256",
                           "--set", "n_steps=1e18", "--set", "buffer_size=2e18", "--quiet", "--run-dir",
                           str(workdir / "run"))
    lines = [ln for ln in err.splitlines() if not ln.startswith("canter: warning:")]  # max_steps < one segment
    assert_one_line_error(code, "\n".join(lines), "segment replay does not fit in memory", "= 1 segment of n_steps",
                          "lower hparams.n_steps")


@pytest.mark.parametrize("algo", ["impala", "appo"])
@pytest.mark.parametrize("n_steps", ["100000000000", "1e18"])
def test_async_rollout_too_big_for_memory_is_one_line(capsys, workdir, algo, n_steps):
    """IMPALA/APPO explorer rollouts: NumPy's allocation error (or its dimension limit) was a traceback
    from the first iteration, after the run directory was written."""
    code, _, err = run_cli(capsys, "train", algo, "--env", "CartPole-v1", "--n-envs", "2", "--max-steps", "256",
                           "--set", f"n_steps={n_steps}", "--quiet", "--run-dir", str(workdir / "run"))
    lines = [ln for ln in err.splitlines() if not ln.startswith("canter: warning:")]  # max_steps < one rollout
    assert_one_line_error(code, "\n".join(lines), "rollout of n_steps", "does not fit in memory", "hparams.n_steps")
    assert not (workdir / "run").exists() or not any((workdir / "run").iterdir())


def test_raised_in_names_the_users_line_not_the_library_frame_that_raised(tmp_path, monkeypatch):
    """A user's call into the standard library (or an installed package) that raises is located at the
    user's line: the innermost frame was json's decoder.py."""
    import importlib

    from canter.errors import raised_in

    (tmp_path / "user_cfg_mod.py").write_text("import json\n\nCONFIG = json.loads('{not json')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValueError) as info:
        importlib.import_module("user_cfg_mod")
    line = raised_in(info.value)
    assert line.startswith("JSONDecodeError: ") and line.endswith(f"({tmp_path / 'user_cfg_mod.py'}, line 3)"), line


def test_a_model_of_another_algorithm_names_the_algorithms_default(capsys, workdir):
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", "model=lstm_actor_critic",
                           "--max-steps", "64", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "model 'lstm_actor_critic' cannot be trained by ppo (it is made for recurrent_ppo)",
                          "ppo's model: mlp_actor_critic")
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("algo, env, model, made_for", [
    ("td3", "Pendulum-v1", "mlp_sac", "sac, tqc"), ("ddpg", "Pendulum-v1", "mlp_sac", "sac, tqc"),
    ("qrdqn", "CartPole-v1", "mlp_iqn", "iqn"), ("rainbow", "CartPole-v1", "mlp_iqn", "iqn"),
])
def test_a_canter_model_made_for_another_algorithm_is_refused_when_built(algo, env, model, made_for):
    """canter's own models skip the method check (their methods share names across algorithms with
    other meanings), so td3 with mlp_sac and qrdqn with mlp_iqn were built and then crashed inside
    training (AttributeError: 'tuple' object has no attribute 'shape'; quantiles() missing 'taus')."""
    import canter
    from canter.errors import CanterError

    with pytest.raises(CanterError, match=rf"model '{model}' cannot be trained by {algo} \(it is made for {made_for}\)"):
        canter.make_trainer(algo, env, model=model, max_steps=64)


def test_a_model_too_large_for_memory_is_one_line(capsys, workdir):
    """A size typed with a few zeros too many (net_arch=[1e14]) was torch's allocator RuntimeError traceback.
    1e14 units need more bytes than any address space holds, so the allocation fails on any machine."""
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", "net_arch=[100000000000000]",
                           "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "cannot build model ActorCritic for ppo: its weights need",
                          "check the sizes in its hyperparameters (net_arch=[100000000000000]")
    assert list(workdir.iterdir()) == []


def test_a_user_configs_validate_refusing_a_value_is_one_line(capsys, workdir, monkeypatch):
    """A user's algorithm Config whose validate() raises ValueError (Python's way to refuse a value; canter's own
    raise CanterError) was a traceback."""
    (workdir / "validating_algo.py").write_text(
        "import dataclasses\nfrom canter.algorithms.ppo import PPO, PPOConfig\n\n\n@dataclasses.dataclass\n"
        "class EvenConfig(PPOConfig):\n    def validate(self):\n        super().validate()\n"
        "        if self.n_steps % 2:\n            raise ValueError(f'n_steps must be even, got {self.n_steps}')\n\n\n"
        "class Even(PPO):\n    Config = EvenConfig\n")
    monkeypatch.syspath_prepend(str(workdir))
    code, _, err = run_cli(capsys, "train", "validating_algo:Even", "--env", "CartPole-v1", "--set", "n_steps=33",
                           "--quiet", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "invalid hparams (validating_algo:EvenConfig.validate): n_steps must be even, "
                                     "got 33")
    assert not (workdir / "run").exists()
