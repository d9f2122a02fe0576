"""Env arguments and envs that misbehave, from the CLI and below it: env_kwargs a factory or constructor
refuses, max_episode_steps, ``--env-kwargs`` for train and collect, an observation outside the env's own
space: one ``canter: error:`` line (exit 2) and nothing half-written."""
from __future__ import annotations

import pytest

from support import assert_one_line_error, run_cli

#: one PPO update of two envs, into ./run (the tests of envs that break gymnasium's API)
_ONE_UPDATE = ["--set", "n_envs=2", "--set", "n_steps=32", "--set", "batch_size=64", "--max-steps", "64", "--quiet",
               "--run-dir", "run"]


def test_collect_env_kwargs_reach_the_env_and_the_dataset(capsys, tmp_path):
    from canter.data.dataset import TransitionDataset

    code, out, err = run_cli(capsys, "collect", "--env", "CartPole-v1", "--env-kwargs", "{max_episode_steps: 5}",
                             "--transitions", "20", "--out", str(tmp_path / "d"))
    assert code == 0, err
    data = TransitionDataset.load(tmp_path / "d")
    assert data.env_kwargs == {"max_episode_steps": 5} and data.truncated.sum() >= 3  # every episode cut at 5


@pytest.mark.parametrize("env", ["CartPole-v1", "BitFlipping-v0"])
def test_misspelled_env_kwargs_key_is_one_line(capsys, workdir, env):
    """A canter-registered env (BitFlipping-v0, a user's factory) given an env_kwargs key its factory does not
    take is one line, as a Gymnasium id is (it was a TypeError traceback, exit 1)."""
    code, _, err = run_cli(capsys, "train", "dqn", "--env", env, "--set", "env_kwargs={n_bitz: 4}",
                           "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, f"bad env_kwargs for '{env}'", "n_bitz")
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("env, kwargs, detail", [
    ("FrozenLake-v1", "{map_name: 9x9}", "KeyError: '9x9'"),  # a Gymnasium id
    ("pettingzoo:tests.match_agents", "{n_agents: -1}", "ValueError"),  # a PettingZoo parallel env
])
def test_an_env_kwargs_value_the_constructor_rejects_is_one_line(capsys, workdir, env, kwargs, detail):
    """Only a TypeError (a misspelled key) was turned into one line: a bad value raising anything else in
    the env's constructor was a traceback, exit 1."""
    code, _, err = run_cli(capsys, "train", "ppo", "--env", env, "--set", f"env_kwargs={kwargs}",
                           "--max-steps", "64", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, f"bad env_kwargs for '{env}'", detail)
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("limit", [0, 2.5])
def test_a_max_episode_steps_gymnasium_refuses_is_one_line(capsys, workdir, limit):
    """CartPole's native vector env (n_envs >= 16, vectorization auto) took max_episode_steps 0 and -1 as is:
    every episode truncated after one step, where gymnasium refuses 0 and takes -1 for no time limit."""
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", f"env_kwargs={{max_episode_steps: {limit}}}",
                           "--n-envs", "16", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "max_episode_steps must be a whole number >= 1, or -1 for no time limit")
    assert list(workdir.iterdir()) == []


def test_max_episode_steps_minus_one_is_no_time_limit_in_a_native_vector_env_too():
    import numpy as np

    from canter.envs import make_vec_env

    env = make_vec_env("CartPole-v1", 16, "auto", {"max_episode_steps": -1})
    try:
        env.reset(seed=0)
        assert not any(env.step(np.zeros(16, np.int64)).truncated.any() for _ in range(5))
    finally:
        env.close()


def test_a_whole_max_episode_steps_written_as_a_float_is_taken():
    """max_episode_steps: 2e1 (or 20.0) was refused as 'must be a whole number >= 1 ..., got 20.0'."""
    import numpy as np

    from canter.envs import make_vec_env

    env = make_vec_env("Pendulum-v1", 2, "sync", {"max_episode_steps": 2e1})  # Pendulum never terminates
    try:
        env.reset(seed=0)
        truncated = [bool(env.step(np.zeros((2, 1), np.float32)).truncated.all()) for _ in range(20)]
        assert truncated == [False] * 19 + [True]
    finally:
        env.close()


def test_play_and_video_envs_take_a_whole_max_episode_steps_written_as_a_float():
    """make_env (canter play, --record-every) passed 20.0 on to gymnasium's TimeLimit: a TypeError traceback
    (canter play RUN --env-kwargs '{max_episode_steps: 20.0}' exited 1); 20.5 is one line there too."""
    from canter.envs import make_env
    from canter.errors import CanterError

    env = make_env("CartPole-v1", max_episode_steps=2e1)
    try:
        assert env.spec.max_episode_steps == 20
    finally:
        env.close()
    with pytest.raises(CanterError, match="max_episode_steps must be a whole number"):
        make_env("CartPole-v1", max_episode_steps=20.5)


def test_an_env_that_fails_without_env_kwargs_keeps_its_traceback():
    """Without env_kwargs a constructor's error is the env's bug: it is raised as it is."""
    from canter.errors import bad_env_kwargs

    exc = KeyError("x")
    assert bad_env_kwargs("E-v0", {}, exc) is exc and bad_env_kwargs("E-v0", None, exc) is exc


@pytest.mark.parametrize("when", ["reset", "step"])
def test_an_observation_outside_the_envs_own_space_is_one_line(capsys, workdir, monkeypatch, when):
    """An env returning a (1, 3) array for its Box(3,) space: NumPy's ValueError from the vector env's
    stacking was a traceback (exit 1)."""
    import gymnasium as gym
    import numpy as np

    from canter.registry import _REGISTRY

    class Bad(gym.Env):
        observation_space = gym.spaces.Box(-1, 1, (3,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self, seed=None, options=None):
            return np.zeros((1, 3) if when == "reset" else 3, np.float32), {}

        def step(self, action):
            return np.zeros((1, 3), np.float32), 0.0, False, False, {}

    monkeypatch.setitem(_REGISTRY["env"], "CanterTestBadObs-v0", Bad)
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CanterTestBadObs-v0", "--max-steps", "64",
                           "--n-envs", "2", "--set", "n_steps=32", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "observation that does not fit its observation space Box(shape=(3,)",
                          "wrong dimensionality")


def test_train_takes_env_kwargs_as_eval_play_and_collect_do(capsys, workdir):
    import yaml

    run = workdir / "run"
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--env-kwargs", "{max_episode_steps: 9}",
                           "--max-steps", "64", "--n-envs", "2", "--set", "n_steps=32", "--quiet", "--run-dir", str(run))
    assert code == 0, err
    assert yaml.safe_load((run / "config.yaml").read_text())["env_kwargs"] == {"max_episode_steps": 9}
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--env-kwargs", "[9]",
                           "--run-dir", str(workdir / "run2"))
    assert_one_line_error(code, err, "--env-kwargs needs a YAML mapping")


@pytest.mark.parametrize("env, kwargs, near", [("CartPole-v1", {"sutton_barto_rewrd": True}, "sutton_barto_reward"),
                                               ("CartPole-v1", {"max_episode_step": 20}, "max_episode_steps"),
                                               ("FrozenLake-v1", {"is_slipery": False}, "is_slippery")])
def test_a_misspelled_env_kwarg_is_answered_with_the_closest(env, kwargs, near):
    """env_kwargs: {sutton_barto_rewrd: true} said only "CartPoleVectorEnv.__init__() got an unexpected keyword
    argument 'sutton_barto_rewrd'"; the closest argument of the env's constructors (or gymnasium.make's) is named."""
    import canter
    from canter.errors import CanterError

    with pytest.raises(CanterError, match=rf"unexpected keyword argument .*; did you mean '{near}'"):
        canter.make_trainer("ppo", env, env_kwargs=kwargs, max_steps=64, n_envs=2, run_dir=None)


def test_an_env_given_as_an_object_or_entry_point_names_how_to_register_it(capsys, tmp_path, monkeypatch):
    """An SB3 user's env instance, class or factory was 'must be an environment id string, got <...>', naming no
    way to pass one's own env; --env my_envs:Corridor (gymnasium's entry point form, not an id) was 'unknown env
    id' with the hint '--env my_pkg.envs:Corridor', the form just given."""
    import gymnasium as gym

    import canter
    from canter.errors import CanterError

    with pytest.raises(CanterError, match=r"got an env made from 'CartPole-v1': pass env='CartPole-v1'"):
        canter.make_trainer("ppo", env=gym.make("CartPole-v1"))
    with pytest.raises(CanterError, match=r"register it in a module, e\.g\. gymnasium\.register\('MyEnv-v0', "
                                          r"entry_point='gymnasium\.envs\.classic_control\.cartpole:CartPoleEnv'\)"):
        canter.make_trainer("ppo", env=gym.envs.classic_control.CartPoleEnv)
    with pytest.raises(CanterError, match=r"entry_point=\.\.\.\) in my_pkg/envs\.py, and pass env='my_pkg"):
        canter.make_trainer("ppo", env=lambda: gym.make("CartPole-v1"))
    (tmp_path / "my_corridors.py").write_text(
        "import gymnasium as gym\nclass Corridor(gym.Env):\n    pass\nclass Unregistered(gym.Env):\n    pass\n"
        "gym.register('TestsCorridor-v0', entry_point='my_corridors:Corridor')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "my_corridors:Corridor")
    assert_one_line_error(code, err, "it is registered as 'TestsCorridor-v0': pass --env my_corridors:TestsCorridor-v0")
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "my_corridors:Unregistered")
    assert_one_line_error(code, err, "gymnasium.register('Unregistered-v0', entry_point='my_corridors:Unregistered')")


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_an_env_written_for_the_old_gym_api_is_one_line(capsys, workdir, monkeypatch, vectorization):
    """An env whose reset() returns obs alone or whose step() returns (obs, reward, done, info), as gym before 0.26
    (and Stable-Baselines3 1.x) had them: gymnasium's vector env unpacked them and failed with "'numpy.float32'
    object has no attribute 'items'" (a traceback, also from the async parent) or 'not enough values to unpack'."""
    (workdir / "old_gym_envs.py").write_text(
        "import gymnasium as gym\nimport numpy as np\n\n\nclass OldReset(gym.Env):\n"
        "    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)\n    action_space = gym.spaces.Discrete(2)\n\n"
        "    def reset(self, seed=None, options=None):\n        return np.zeros(2, np.float32)\n\n"
        "    def step(self, action):\n        return np.zeros(2, np.float32), 1.0, True, False, {}\n\n\n"
        "class OldStep(OldReset):\n    def reset(self, seed=None, options=None):\n        return np.zeros(2, np.float32), {}\n\n"
        "    def step(self, action):\n        return np.zeros(2, np.float32), 1.0, True, {}\n\n\n"
        "gym.register('TestsOldReset-v0', entry_point=OldReset, max_episode_steps=10)\n"
        "gym.register('TestsOldStep-v0', entry_point=OldStep, max_episode_steps=10)\n")
    monkeypatch.syspath_prepend(str(workdir))
    for env, needle in (("TestsOldReset-v0", "reset() returned ndarray, not (obs, info): gymnasium's API"),
                        ("TestsOldStep-v0", "step() returned 4 values, not 5: gymnasium's API")):
        code, _, err = run_cli(capsys, "train", "ppo", "--env", f"old_gym_envs:{env}", "--vectorization",
                               vectorization, "--set", "n_envs=2", "--set", "n_steps=32", "--set", "batch_size=64",
                               "--max-steps", "64", "--quiet", "--run-dir", "run")
        assert_one_line_error(code, err, needle, "(obs, reward, done, info)")


@pytest.mark.parametrize("vectorization, value", [("sync", "reward"), ("async", "reward"), ("async", "terminated")])
def test_a_reward_or_flag_returned_as_an_array_is_one_line(capsys, workdir, monkeypatch, vectorization, value):
    """A step() returning its reward as np.array([r]) (or terminated as np.array([t])), a common slip that
    Stable-Baselines3's check_env warns about, was a traceback: "ValueError: setting an array element with a
    sequence." from gymnasium's sync vector env, and from the async one's stacked (2, 1) arrays a broadcasting
    error deep in canter's episode statistics or rollout buffer."""
    (workdir / "array_step_envs.py").write_text(
        "import gymnasium as gym\nimport numpy as np\n\n\nclass ArrayStep(gym.Env):\n"
        "    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)\n    action_space = gym.spaces.Discrete(2)\n\n"
        "    def __init__(self, value='reward'):\n        self.value = value\n\n"
        "    def reset(self, seed=None, options=None):\n        return np.zeros(2, np.float32), {}\n\n"
        "    def step(self, action):\n        out = {'reward': 1.0, 'terminated': False}\n"
        "        out[self.value] = np.array([out[self.value]])\n"
        "        return np.zeros(2, np.float32), out['reward'], out['terminated'], False, {}\n\n\n"
        "gym.register('TestsArrayStep-v0', entry_point=ArrayStep, max_episode_steps=10, disable_env_checker=True)\n")
    monkeypatch.syspath_prepend(str(workdir))
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "array_step_envs:TestsArrayStep-v0", "--env-kwargs",
                           f"{{value: {value}}}", "--vectorization", vectorization, *_ONE_UPDATE)
    assert_one_line_error(code, err, f"the env's step() returned a {value} ", "where one value belongs"
                          if vectorization == "async" else "a sequence (an array or list)", "gymnasium's API")


def test_an_env_whose_reset_takes_no_seed_is_one_line(capsys, workdir, monkeypatch):
    """reset(self) without seed (gym before 0.22, which Stable-Baselines3's check_env flags) was gymnasium's
    TypeError traceback ('NoSeed.reset() got an unexpected keyword argument ...') with sync vectorization."""
    (workdir / "no_seed_envs.py").write_text(
        "import gymnasium as gym\nimport numpy as np\n\n\nclass NoSeed(gym.Env):\n"
        "    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)\n    action_space = gym.spaces.Discrete(2)\n\n"
        "    def reset(self):\n        return np.zeros(2, np.float32), {}\n\n"
        "    def step(self, action):\n        return np.zeros(2, np.float32), 1.0, True, False, {}\n\n\n"
        "gym.register('TestsNoSeed-v0', entry_point=NoSeed, max_episode_steps=10, disable_env_checker=True)\n")
    monkeypatch.syspath_prepend(str(workdir))
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "no_seed_envs:TestsNoSeed-v0", "--vectorization", "sync",
                           *_ONE_UPDATE)
    assert_one_line_error(code, err, "the env's reset() takes no 'seed' (NoSeed.reset() got an unexpected keyword "
                                     "argument 'seed'): gymnasium's API is reset(self, seed=None, options=None)")


@pytest.mark.parametrize("env_id, near", [
    ("Gridwalk-v1", "did you mean 'my_typo_envs:GridWalk-v1' or 'my_typo_envs:GridWalk-v0'?"),
    ("CartPole-v2", "did you mean 'CartPole-v1'"),
    ("Zqxjwv-v9", "the module registers no env of that id (gymnasium.register('Zqxjwv-v9', entry_point=...)"),
], ids=["own-id", "gymnasium-id", "none"])
def test_a_misspelled_id_after_its_module_suggests_the_modules_ids(capsys, workdir, monkeypatch, env_id, near):
    """'--env my_pkg.envs:Gridwalk-v1' (the module imported, the id misspelled) was told to pass
    '--env my_pkg.envs:Gridwalk-v1', what it had passed, and offered the bare 'GridWalk-v1' among Atari's ids."""
    (workdir / "my_typo_envs.py").write_text(
        "import gymnasium as gym\nimport canter\nfrom gymnasium.envs.classic_control import CartPoleEnv\n"
        "class GridWalk(CartPoleEnv):\n    pass\n"
        "gym.register('GridWalk-v1', entry_point='my_typo_envs:GridWalk')\n"
        "@canter.register('env', 'GridWalk-v0')\ndef make(**kw):\n    return gym.make('CartPole-v1', **kw)\n")
    monkeypatch.syspath_prepend(str(workdir))
    code, _, err = run_cli(capsys, "train", "ppo", "--env", f"my_typo_envs:{env_id}", "--run-dir", str(workdir / "run"))
    line = assert_one_line_error(code, err, f"unknown env id '{env_id}' after importing module 'my_typo_envs'", near)
    assert "an env of your own is found" not in line
    assert not (workdir / "run").exists()


def test_a_misspelled_env_kwarg_of_a_factory_passing_them_on_names_the_closest(capsys, workdir, monkeypatch):
    """A canter-registered factory ``make(**kw)`` that passes its keywords on to its env class: the factory's
    signature names none, so a misspelled key got "Walk.__init__() got an unexpected keyword argument 'lenght'"
    alone; the refusing class's parameters are found from the error."""
    (workdir / "my_factory_envs.py").write_text(
        "import gymnasium as gym\nimport canter\nfrom gymnasium.envs.classic_control import CartPoleEnv\n\n\n"
        "class Walk(CartPoleEnv):\n    def __init__(self, length=5, render_mode=None):\n"
        "        super().__init__(render_mode=render_mode)\n\n\n"
        "@canter.register('env', 'FactoryWalk-v0')\ndef make(**kw):\n    return gym.wrappers.TimeLimit(Walk(**kw), 50)\n")
    monkeypatch.syspath_prepend(str(workdir))
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "my_factory_envs:FactoryWalk-v0", "--env-kwargs",
                           "{lenght: 3}", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "Walk.__init__() got an unexpected keyword argument 'lenght'; did you mean 'length'?")
    assert not (workdir / "run").exists()


@pytest.mark.parametrize("env, near", [("phys2d/CartPole-v1", "CartPole-v1"), ("phys2d/Pendulum-v0", "Pendulum-v1")])
def test_an_env_whose_module_cannot_import_a_dependency_is_one_line(capsys, monkeypatch, workdir, env, near):
    """gymnasium's phys2d envs import jax, which gymnasium does not raise DependencyNotInstalled for: without jax,
    training (one env, and 4: native vectorisation) was a ModuleNotFoundError traceback (found by a sweep over
    gymnasium's registry). The line names the module and the numpy env of that name."""
    import sys

    for name in [n for n in sys.modules if n == "jax" or n.startswith(("jax.", "gymnasium.envs.phys2d"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "jax", None)  # import jax fails as if it were not installed
    for n_envs in ("1", "4"):
        code, _, err = run_cli(capsys, "train", "ppo", "--env", env, "--n-envs", n_envs, "--run-dir", "run")
        assert_one_line_error(code, err, f"env '{env}' is missing a dependency", "pip install jax", f"use '{near}'")
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("flags", [["--env-kwargs", "{is_slippery:false}"],
                                   ["--set", "env_kwargs={map_name: 4x4, is_slippery:false}"],
                                   ["-f", "config.yaml"]])
def test_a_key_glued_to_its_value_in_yaml_is_one_line_naming_the_spacing(capsys, workdir, flags):
    """'{is_slippery:false}' is one YAML key 'is_slippery:false' of value null: FrozenLake refused it with
    'unexpected keyword argument ...; did you mean 'is_slippery'?', naming what the user had written (found by
    a sweep over gymnasium's envs). The line now says a colon needs a space after it."""
    (workdir / "config.yaml").write_text("env_kwargs: {is_slippery:false}\n")
    code, _, err = run_cli(capsys, "train", "dqn", "--env", "FrozenLake-v1", *flags, "--run-dir", "run")
    assert_one_line_error(code, err, "YAML reads 'is_slippery:false'", "(is_slippery: false)")
    assert sorted(p.name for p in workdir.iterdir()) == ["config.yaml"]


def test_a_quoted_key_with_a_colon_or_a_colon_of_its_own_is_kept():
    from canter.yaml_io import parse_yaml_value

    assert parse_yaml_value('{"a:b": null, my_mod:Wrap: null}', "k") == {"a:b": None, "my_mod:Wrap": None}


@pytest.mark.parametrize("env, newer", [("Hopper-v3", "Hopper-v5"), ("Ant-v2", "Ant-v5")])
def test_a_retired_gymnasium_id_is_one_line_naming_its_newest_version(capsys, workdir, env, newer):
    """gymnasium keeps MuJoCo's v2/v3 ids as stubs raising ImportError ('moved to gymnasium-robotics'): training
    one was that ImportError's traceback, exit 1 (found by a sweep over gymnasium's registry)."""
    code, _, err = run_cli(capsys, "train", "sac", "--env", env, "--run-dir", "run")
    assert_one_line_error(code, err, f"env '{env}' cannot be made", "gymnasium-robotics", f"use '{newer}'")
    assert list(workdir.iterdir()) == []
