"""Offline runs from the command line and from Python: dataset paths, env kwargs kept with a dataset,
Minari writes, one-line CLI errors and benchmarks of a dataset."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import canter
from canter.config import resolve_config
from canter.data.dataset import TransitionDataset, collect
from canter.errors import CanterError
from support import assert_one_line_error, run_cli, snapshot


@pytest.mark.parametrize("store", ["canter", "minari"])
def test_a_dataset_keeps_its_envs_kwargs_and_an_offline_run_evaluates_there(tmp_path, monkeypatch, store):
    """Data collected with env_kwargs (another reward, a shorter time limit) evaluate on that env, not
    on the id's default (the kwargs were dropped on save, Minari export and import)."""
    kwargs = {"sutton_barto_reward": True, "max_episode_steps": 10}
    data = collect("CartPole-v1", 300, None, seed=0, env_kwargs=kwargs)
    if store == "minari":
        pytest.importorskip("minari")
        monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
        data.to_minari("cartpole/kwargs-v0")
        path = "minari:cartpole/kwargs-v0"
    else:
        path = str(data.save(tmp_path / "data"))
    assert TransitionDataset.load(path).env_kwargs == kwargs
    trainer = canter.make_trainer("bc", None, dataset=path, max_steps=10, eval_every=10, eval_episodes=2)
    result = trainer.evaluate()
    trainer.close()
    assert trainer.run.env_kwargs == kwargs and max(result.lengths) <= 10 and max(result.returns) <= 0
    with pytest.raises(CanterError, match="collected with env_kwargs"):
        canter.make_trainer("bc", None, dataset=path, env_kwargs={"max_episode_steps": 50})


def test_minari_write_interrupted_by_ctrl_c_leaves_nothing(tmp_path, monkeypatch):
    """Writing a Minari dataset takes most of a collect's time (~40 s for 20k CartPole transitions): a Ctrl-C then
    left a half-written dataset that held no episode and blocked its id ('already exists')."""
    minari = pytest.importorskip("minari")
    from minari.storage import get_dataset_path

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    data = collect("CartPole-v1", 60, None, seed=0)
    real = minari.create_dataset_from_buffers

    def interrupted(dataset_id, buffers, **kwargs):
        (Path(get_dataset_path(dataset_id)) / "data" / "0").mkdir(parents=True)  # the first episode, then Ctrl-C
        raise KeyboardInterrupt

    monkeypatch.setattr(minari, "create_dataset_from_buffers", interrupted)
    with pytest.raises(KeyboardInterrupt):
        data.to_minari("cartpole/ctrl-c-v0")
    assert not list((tmp_path / "minari").rglob("*"))  # Minari's own (empty) datasets folder at most
    monkeypatch.setattr(minari, "create_dataset_from_buffers", real)
    assert data.to_minari("cartpole/ctrl-c-v0") > 0  # the id is free


@pytest.mark.parametrize("argv, needles", [
    (["train", "bc", "--env", "CartPole-v1", "--quiet"], ["bc learns from a dataset", "--dataset"]),
    (["train", "ppo", "--env", "CartPole-v1", "--dataset", "DATA", "--quiet"], ["only for offline", "bc, cql, td3bc"]),
    (["train", "bc", "--env", "Acrobot-v1", "--dataset", "DATA", "--quiet"], ["collected on CartPole-v1",
                                                                            "--env CartPole-v1"]),
    (["train", "td3bc", "--dataset", "DATA", "--quiet"], ["TD3BC needs a Box action space"]),
    (["train", "bc", "--dataset", "MISSING", "--quiet"], ["dataset not found"]),
    (["train", "bc", "--dataset", "DATA", "--explorers", "2", "--quiet"], ["takes no explorers"]),
    (["collect", "--out", "NEW"], ["--env ENV"]),
    (["collect", "--env", "CartPole-v1", "--out", "DATA"], ["already exists", "--out"]),
    (["collect", "--env", "CartPole-v1", "--out", "NEW", "--epsilon", "1.5"], ["--epsilon must be between 0 and 1"]),
    (["collect", "--env", "CartPole-v1", "--out", "NEW", "--transitions", "0"],
     ["--transitions must be a whole number >= 1"]),
    (["collect", "--env", "CartPol-v1", "--out", "NEW"], ["CartPole-v1"]),
    (["collect", "--env", "CartPol-v1", "--out", "NODIR/x"], ["CartPole-v1"]),  # its missing directory is not made
    (["collect", "--env", "CartPole-v1", "--out", "DATAFILE/x"], ["is a file, not a directory"]),
    (["collect", "--env", "CartPole-v1", "--out", "DATAFILE/y/x"], ["data.json' is a file, not a directory"]),
    (["train", "bc", "--dataset", "DATA", "--set", "monitor=rolling", "--set", "early_stopping=2", "--quiet"],
     ["no rolling return", "monitor=eval"]),
    (["train", "bc", "--dataset", "DATA", "--set", "env_kwargs={sutton_barto_reward: true}", "--quiet"],
     ["collected with env_kwargs {}", "leave env_kwargs out"]),
    (["train", "bc", "--dataset", "minari:", "--quiet"], ["is not a Minari dataset id"]),
    (["collect", "--env", "CartPole-v1", "--out", "."], ["--out needs a file name"]),
    (["collect", "--env", "CartPole-v1", "--out", ""], ["--out needs a file name"]),
])
def test_offline_cli_errors_are_one_line_and_write_nothing(tmp_path, capsys, argv, needles):
    collect("CartPole-v1", 200, None, seed=0).save(tmp_path / "data")
    before = snapshot(tmp_path)
    paths = {"DATA": str(tmp_path / "data"), "MISSING": str(tmp_path / "nope"), "NEW": str(tmp_path / "new"),
             "NODIR/x": str(tmp_path / "nodir" / "x"), "DATAFILE/x": str(tmp_path / "data.json" / "x"),
             "DATAFILE/y/x": str(tmp_path / "data.json" / "y" / "x")}
    code, _, err = run_cli(capsys, *[paths.get(a, a) for a in argv], *(["--run-dir", str(tmp_path / "run")]
                                                                      if argv[0] == "train" else []))
    assert_one_line_error(code, err, *needles)
    assert snapshot(tmp_path) == before  # no run directory, no dataset, the existing dataset untouched


def test_a_dataset_given_from_python_as_a_path_trains(tmp_path):
    """``canter.train("bc", dataset=Path(...))`` (run_dir takes a Path) was refused: "'dataset' must be a
    str or null, got PosixPath(...)", though the env was already read from that Path's dataset."""
    collect("CartPole-v1", 200, None, seed=0).save(tmp_path / "data")
    agent = canter.train("bc", dataset=tmp_path / "data", max_steps=20, gradient_steps=10, eval_episodes=1,
                         run_dir=tmp_path / "run")
    assert agent.run_config.dataset == str(tmp_path / "data") and agent.run_config.env == "CartPole-v1"
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["steps"] == 20


@pytest.mark.parametrize("env", [None, "CartPole-v1"])
def test_a_dataset_object_given_from_python_is_told_to_be_saved_first(tmp_path, env):
    """``canter.train("bc", dataset=data)`` with a TransitionDataset (d3rlpy's ``fit(dataset)``) said 'no environment
    given; pass --env', and with env='CartPole-v1' "'dataset' must be a str or null, got TransitionDataset(obs=array(
    [[...": found by the offline bug hunt. One line now says to save it and pass its path; nothing is written."""
    data = collect("CartPole-v1", 20, None, seed=0)
    with pytest.raises(CanterError, match=r"takes a dataset's path .* data.save\('data/name'\)") as info:
        canter.train("bc", env=env, dataset=data, max_steps=10, run_dir=tmp_path / "run")
    assert "\n" not in str(info.value) and "array" not in str(info.value) and not (tmp_path / "run").exists()


def test_collect_never_overwrites_a_dataset_written_while_it_ran(tmp_path, capsys, monkeypatch):
    """--out was checked only before collecting: a second collect to the same path that finished first (a 100k
    collect takes ~25 s here) was silently overwritten, against 'never overwrites' (found by the offline bug
    hunt, with two collects). It is checked again before saving; the other's dataset stays."""
    import canter.data.dataset as dataset

    real = dataset.collect

    def racing(*args, **kwargs):  # another collect writes the same --out meanwhile
        real("CartPole-v1", 7, None, seed=1).save(tmp_path / "data")
        return real(*args, **kwargs)

    monkeypatch.setattr(dataset, "collect", racing)
    code, _, err = run_cli(capsys, "collect", "--env", "CartPole-v1", "--transitions", "20", "--out", str(tmp_path / "data"))
    assert_one_line_error(code, err, "data.safetensors' already exists", "written while this collect ran")
    assert len(TransitionDataset.load(tmp_path / "data")) == 7


def test_a_dataset_from_a_gymnasium_loops_lists_is_taken_and_bad_values_are_one_line():
    """Transitions recorded in Python lists (a gymnasium loop's obs, actions, ...) were an AttributeError traceback
    ("'list' object has no attribute 'shape'"), found by the offline bug hunt: lists are taken as arrays now, and
    rows of different shapes or values that are not numbers are one line naming the array."""
    import gymnasium as gym
    import numpy as np

    env = gym.make("CartPole-v1")
    obs, lists = env.reset(seed=0)[0], {k: [] for k in ("obs", "actions", "rewards", "next_obs", "terminated", "truncated")}
    for _ in range(5):
        action = int(env.action_space.sample())
        nxt, reward, terminated, truncated, _ = env.step(action)
        for k, v in zip(lists, (obs, action, reward, nxt, terminated, truncated)):
            lists[k].append(v)
        obs = nxt
    spaces = dict(env_id="CartPole-v1", observation_space=env.observation_space, action_space=env.action_space)
    data = TransitionDataset(**lists, **spaces)
    assert data.obs.shape == (5, 4) and data.actions.tolist() == lists["actions"] and data.rewards.dtype == np.float32
    for bad, needle in (({"obs": lists["obs"][:4] + [obs[:3]]}, "dataset obs are not an array of numbers"),
                        ({"actions": [None] * 5}, "dataset actions hold values of dtype object")):
        with pytest.raises(CanterError, match=needle):
            TransitionDataset(**{**lists, **bad}, **spaces)


def test_a_dataset_trains_with_its_env_named_with_the_module_that_registers_it(tmp_path):
    """A dataset of an env that a module registers (or a Minari dataset of one) records the bare id; in a new process
    the id is unknown, and the error says to pass --env my_pkg.envs:ID, which was then refused: 'collected on ID,
    not my_pkg.envs:ID' (found by the offline bug hunt). 'module:ID' names the same env now, and the dataset's
    env_kwargs still come with it."""
    collect("CartPole-v1", 50, None, seed=0, env_kwargs={"max_episode_steps": 7}).save(tmp_path / "data")
    agent = canter.train("bc", env="gymnasium:CartPole-v1", dataset=tmp_path / "data", max_steps=2, gradient_steps=1,
                         eval_episodes=1, run_dir=tmp_path / "run")
    assert agent.run_config.env == "gymnasium:CartPole-v1" and agent.run_config.env_kwargs == {"max_episode_steps": 7}
    with pytest.raises(CanterError, match="was collected on CartPole-v1, not gymnasium:Acrobot-v1"):
        canter.train("bc", env="gymnasium:Acrobot-v1", dataset=tmp_path / "data", max_steps=2)


def test_an_offline_run_from_a_relative_dataset_path_resumes_from_another_directory(tmp_path, monkeypatch, capsys):
    """The run recorded --dataset as given (data/random), so canter train --resume RUN from any other working
    directory failed with 'dataset not found' (and --resume takes no --dataset); the resolved config holds the
    absolute path."""
    (tmp_path / "project").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "project")
    collect("CartPole-v1", 200, None, seed=0).save("data")
    assert run_cli(capsys, "train", "bc", "--dataset", "data", "--max-steps", "20", "--set", "gradient_steps=10",
                   "--set", "eval_episodes=1", "--run-dir", "run", "--quiet")[0] == 0
    assert canter.load("run").run_config.dataset == str(tmp_path / "project" / "data")
    # the resolved config says so too (canter benchmark compares it with a finished run's config.yaml)
    assert resolve_config("bc", dataset="data")[0].dataset == str(tmp_path / "project" / "data")
    monkeypatch.chdir(tmp_path / "elsewhere")
    code, _, err = run_cli(capsys, "train", "--resume", str(tmp_path / "project" / "run"), "--max-steps", "40",
                           "--quiet")
    assert code == 0, err
    assert json.loads((tmp_path / "project" / "run" / "summary.json").read_text())["steps"] == 40


def test_an_offline_run_whose_dataset_was_moved_resumes_with_its_new_path(tmp_path, capsys):
    """A run whose dataset was moved could not be resumed ('dataset not found', and --resume took no --dataset);
    ``--resume RUN --dataset NEW`` now continues it when NEW is the same dataset (the id the run recorded), which
    the run then records; without it, or with another dataset, one line says what to do and nothing is written."""
    collect("CartPole-v1", 200, None, seed=0).save(tmp_path / "data")
    collect("CartPole-v1", 200, None, seed=0).save(tmp_path / "again")  # the same transitions, another dataset
    run = tmp_path / "run"
    assert run_cli(capsys, "train", "bc", "--dataset", str(tmp_path / "data"), "--max-steps", "20", "--set",
                   "gradient_steps=10", "--set", "eval_episodes=1", "--run-dir", str(run), "--quiet")[0] == 0
    (tmp_path / "moved").mkdir()
    for ext in (".json", ".safetensors"):
        (tmp_path / f"data{ext}").rename(tmp_path / "moved" / f"data{ext}")
    before = snapshot(run)
    resume = ["train", "--resume", str(run), "--max-steps", "40", "--quiet"]
    for extra, needles in (([], ["is not there any more", "--dataset NEW_PATH"]),
                           (["--dataset", str(tmp_path / "again")], ["is not the one run", "new path"]),
                           (["--dataset", str(tmp_path / "nowhere")], ["dataset not found"])):
        assert_one_line_error(*run_cli(capsys, *resume, *extra)[::2], *needles)
        assert snapshot(run) == before
    # as a resumed run killed before its next checkpoint leaves config.yaml: the new path, last the old one
    config = (run / "config.yaml").read_text()
    (run / "config.yaml").write_text(config.replace(str(tmp_path / "data"), str(tmp_path / "moved" / "data")))
    code, _, err = run_cli(capsys, *resume, "--dataset", str(tmp_path / "moved" / "data"))
    assert code == 0, err
    assert json.loads((run / "summary.json").read_text())["steps"] == 40
    assert canter.load(run).run_config.dataset == str(tmp_path / "moved" / "data")  # a later resume finds it
    assert run_cli(capsys, "train", "--resume", str(run), "--max-steps", "60", "--quiet")[0] == 0


def test_a_benchmark_of_a_dataset_with_env_kwargs_reuses_its_finished_runs(tmp_path, monkeypatch):
    """The dataset's env_kwargs became the run's only inside the trainer, so the resolved config said {}
    while config.yaml held them: running the same benchmark file again (which reuses finished runs) was
    refused with "was run with a different 'env_kwargs'"."""
    from canter.tools.benchmark import benchmark

    kwargs = {"is_slippery": False}
    collect("FrozenLake-v1", 300, None, seed=0, env_kwargs=kwargs).save(tmp_path / "data")
    assert resolve_config("bc", dataset=str(tmp_path / "data"))[0].env_kwargs == kwargs
    spec = tmp_path / "bench.yaml"
    spec.write_text(f"seeds: [0]\nenvs: [FrozenLake-v1]\nset: {{max_steps: 20, eval_episodes: 1}}\n"
                    f"algos:\n  bc: {{set: {{dataset: '{tmp_path / 'data'}', gradient_steps: 10}}}}\n")
    first = benchmark(spec, tmp_path / "out", quiet=True)
    again = benchmark(spec, tmp_path / "out", quiet=True)  # the finished run is reused
    assert first.rows == again.rows and len(first.rows) == 1


def test_minari_keeps_image_observations_exactly(tmp_path, monkeypatch):
    """Minari JPEG-encodes image observations (uint8, at least 32 x 32) unless told not to: RGB frames written
    with to_minari read back with pixels moved (by up to 244 on random images), so an offline run learnt from
    other observations than the ones collected, and one-channel frames (ImageReach's 36 x 36 x 1) could not be
    written at all ('Cannot handle this data type: (1, 1, 1), |u1'). They are now stored as they are."""
    pytest.importorskip("minari")
    import gymnasium as gym
    import numpy as np

    from canter.data.minari import from_minari

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    if "CanterImageReach-v0" not in gym.registry:  # Minari records the env by its entry point's name
        gym.register("CanterImageReach-v0", entry_point="image_dict_env:ImageReachEnv", disable_env_checker=True)
    data = collect("CanterImageReach-v0", 30, None, seed=0)
    assert data.obs.shape[1:] == (36, 36, 1) and data.obs.dtype == np.uint8
    assert data.to_minari("reach/images-v0") == 30
    back = from_minari("reach/images-v0")
    np.testing.assert_array_equal(back.obs, data.obs)
    np.testing.assert_array_equal(back.next_obs, data.next_obs)
    rgb = gym.spaces.Box(0, 255, (48, 48, 3), np.uint8)
    frames = np.random.default_rng(0).integers(0, 256, (11, 48, 48, 3), dtype=np.uint8)
    data = TransitionDataset(obs=frames[:-1], actions=np.zeros((10, 1), np.float32), rewards=np.zeros(10, np.float32),
                             next_obs=frames[1:], terminated=np.arange(10) == 9, truncated=np.zeros(10, bool),
                             env_id="CanterImageReach-v0", observation_space=rgb, action_space=data.action_space)
    assert data.to_minari("reach/rgb-v0") == 10
    np.testing.assert_array_equal(from_minari("reach/rgb-v0").obs, frames[:-1])


def test_a_minari_dataset_of_dict_observations_is_packed_and_trains(tmp_path, monkeypatch):
    """A Minari dataset of a Dict env (D4RL's mazes and other goal envs) was refused ('has a Dict observation space;
    canter learns offline from Box or Discrete spaces'), though canter trains on such envs by packing their
    observations: found by the offline bug hunt. Its dict of arrays is packed as the env's observations are."""
    pytest.importorskip("minari")
    import gymnasium as gym
    import minari
    import numpy as np
    from minari.data_collector import EpisodeBuffer

    from canter.envs.make import make_vec_env

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    if "CanterDictCue-v0" not in gym.registry:  # Minari records the env by its entry point's name
        gym.register("CanterDictCue-v0", entry_point="image_dict_env:ImageCueEnv", disable_env_checker=True)
    env = gym.make("CanterDictCue-v0", float_flip=True)
    first = env.reset(seed=0)[0]
    steps = [env.step(i % 2) for i in range(10)]  # one episode, truncated after 10 steps
    observations = {k: np.stack([first[k]] + [s[0][k] for s in steps]) for k in first}
    minari.create_dataset_from_buffers("cue/dict-v0", [EpisodeBuffer(
        id=0, observations=observations, actions=np.arange(10) % 2, rewards=np.array([s[1] for s in steps]),
        terminations=np.zeros(10, bool), truncations=np.arange(10) == 9, infos={})], env=env.spec, data_format="arrow",
        observation_space=env.observation_space, action_space=env.action_space, jpeg_encoding=False)
    data = TransitionDataset.load("minari:cue/dict-v0")
    vec = make_vec_env("CanterDictCue-v0", 1, "sync", {"float_flip": True})
    assert data.observation_space == vec.single_observation_space and data.env_kwargs == {"float_flip": True}
    np.testing.assert_array_equal(data.obs[0], vec.reset(seed=0)[0])
    np.testing.assert_array_equal(data.next_obs[:-1], data.obs[1:])
    vec.close()
    agent = canter.train("bc", dataset="minari:cue/dict-v0", max_steps=2, gradient_steps=1, batch_size=4,
                         eval_episodes=1, run_dir=tmp_path / "run")
    assert agent.observation_space == data.observation_space


def test_dict_observations_of_boxes_are_packed_at_once_as_row_by_row():
    """Packing a dataset's Dict observations a row at a time took 13 us a row (26 s for a million transitions, at
    every load of a Minari maze dataset): Box entries are now packed at once, to the same values."""
    import time

    import gymnasium as gym
    import numpy as np

    from canter.envs.packing import ObservationPacker, pack_rows

    space = gym.spaces.Dict({"observation": gym.spaces.Box(-1, 1, (4,)), "goal": gym.spaces.Tuple((
        gym.spaces.Box(-1, 1, (2,), np.float64), gym.spaces.Box(0, 9, (1, 2), np.int64)))})
    packer, n = ObservationPacker(space, gym.spaces.Discrete(2)), 50_000
    rng = np.random.default_rng(0)
    values = {"observation": rng.random((n, 4)), "goal": (rng.random((n, 2)), rng.integers(0, 9, (n, 1, 2)))}
    start = time.perf_counter()
    packed = pack_rows(values, packer, "dataset obs")
    assert time.perf_counter() - start < 0.5
    rows = [0, 1, 777, n - 1]
    expected = [packer({"observation": values["observation"][i], "goal": tuple(v[i] for v in values["goal"])})
                for i in rows]
    np.testing.assert_array_equal(packed[rows], np.stack(expected))
    assert packed.dtype == packer.space.dtype and packed.shape == (n, 8)


def test_a_dataset_whose_action_bounds_differ_from_the_env_names_the_bound(tmp_path, capsys):
    """A dataset of Pendulum-v1 stored with actions in [-1, 1] (as d3rlpy and others normalise them) was refused
    as 'holds Box(shape=(3,), float32) -> Box(shape=(1,), float32), but Pendulum-v1 has Box(shape=(3,), float32)
    -> Box(shape=(1,), float32)': the same description twice, without saying what differs."""
    import gymnasium as gym
    import numpy as np

    data = collect("Pendulum-v1", 20, None, seed=0)
    data.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    data.actions = data.actions / 2
    data.save(tmp_path / "data")
    code, _, err = run_cli(capsys, "train", "td3bc", "--dataset", str(tmp_path / "data"), "--quiet",
                           "--run-dir", str(tmp_path / "run"))
    assert_one_line_error(code, err, "holds", "Pendulum-v1 has", "bounds differ: action low[0] -1.0 vs -2.0")
    assert not (tmp_path / "run").exists()


def test_n_envs_of_an_offline_run_is_warned_about_as_ignored(tmp_path):
    """``--n-envs 4`` on an offline run was taken without a word and recorded in config.yaml, though the run
    steps no training env (its evaluation runs eval_envs copies): it now warns that the run ignores it."""
    from canter.errors import CanterWarning

    path = collect("CartPole-v1", 50, None, seed=0).save(tmp_path / "data")
    with pytest.warns(CanterWarning, match="bc learns from a dataset .* ignores n_envs=4"):
        canter.make_trainer("bc", None, dataset=str(path), n_envs=4, max_steps=10).close()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", CanterWarning)  # the default (one env) says nothing
        canter.make_trainer("bc", None, dataset=str(path), max_steps=10).close()


def test_a_dataset_records_its_source_run_by_its_absolute_path(tmp_path, monkeypatch, capsys):
    """'canter collect runs/x --out ...' from the project directory recorded info.checkpoint as
    'runs/x/checkpoints/best' (and --from-replay info.run as 'runs/x'), paths that say nothing once the dataset
    is read from anywhere else; the dataset path an offline run records is absolute for the same reason."""
    collect("CartPole-v1", 40, None, seed=0).save(tmp_path / "data")
    canter.train("bc", dataset=str(tmp_path / "data"), max_steps=10, gradient_steps=10, eval_episodes=1,
                 run_dir=tmp_path / "bc")
    canter.train("dqn", env="CartPole-v1", run_dir=tmp_path / "dqn", max_steps=100, learning_starts=50,
                 net_arch=[8], eval_every=0, eval_episodes=1)
    monkeypatch.chdir(tmp_path)
    assert run_cli(capsys, "collect", "bc", "--out", "policy", "--transitions", "20")[0] == 0
    assert run_cli(capsys, "collect", "dqn", "--from-replay", "--out", "replay")[0] == 0
    policy, replay = TransitionDataset.load(tmp_path / "policy").info, TransitionDataset.load(tmp_path / "replay").info
    assert Path(policy["checkpoint"]).is_absolute() and Path(policy["checkpoint"]).parent == tmp_path / "bc" / "checkpoints"
    assert replay["run"] == str(tmp_path / "dqn")


def test_a_dataset_file_holding_no_transition_or_bad_values_is_named_in_the_error(tmp_path, capsys):
    """A dataset file emptied or edited (written by another tool, by hand) was refused in one line that did not say
    which file: 'a dataset needs at least one transition' (found by the offline bug hunt). The line names it now."""
    from canter.checkpoint import load_checkpoint, save_checkpoint

    state, meta = load_checkpoint(collect("CartPole-v1", 20, None, seed=0).save(tmp_path / "data"))
    kept = {k: v for k, v in meta.items() if k in ("kind", "env", "observation_space", "action_space", "info")}
    save_checkpoint(tmp_path / "empty", {k: v[:0] for k, v in state.items()}, kept)
    save_checkpoint(tmp_path / "third", {**state, "actions": state["actions"] * 0 + 2}, kept)
    for name, needle in (("empty", "a dataset needs at least one transition"), ("third", "dataset action 2 (row 0")):
        before = snapshot(tmp_path)
        code, _, err = run_cli(capsys, "train", "bc", "--dataset", str(tmp_path / name), "--max-steps", "4", "--quiet",
                               "--run-dir", str(tmp_path / "run"))
        assert_one_line_error(code, err, needle, f"(dataset {tmp_path / name})")
        assert snapshot(tmp_path) == before


def test_a_minari_dataset_holding_bad_values_is_named_in_the_error(tmp_path, monkeypatch):
    """The same for a Minari dataset: a NaN reward was refused without naming the dataset."""
    pytest.importorskip("minari")
    import gymnasium as gym
    import minari
    import numpy as np
    from minari.data_collector import EpisodeBuffer

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    env = gym.make("CartPole-v1")
    rewards = np.ones(3)
    rewards[1] = np.nan
    minari.create_dataset_from_buffers("cartpole/nan-v0", [EpisodeBuffer(
        id=0, observations=np.zeros((4, 4), np.float32), actions=np.array([0, 1, 0]), rewards=rewards,
        terminations=np.array([False, False, True]), truncations=np.zeros(3, bool), infos={})], env=env.spec,
        data_format="arrow", algorithm_name="test")
    with pytest.raises(CanterError, match=r"rewards hold non-finite .*\(Minari dataset 'cartpole/nan-v0'\)$"):
        TransitionDataset.load("minari:cartpole/nan-v0")
