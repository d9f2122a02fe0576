"""Offline datasets: refusing bad data, loading datasets and reading their statistics (collecting transitions,
random actions and converting actions between the env and the dataset: test_offline_collect.py)."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from canter.checkpoint import load_checkpoint, save_checkpoint
from canter.data.dataset import TransitionDataset, collect
from canter.errors import CanterError
from checkpoint_support import write_checkpoint_json
from support import assert_one_line_error, run_cli, snapshot


# ---------------------------------------------------------------------------------------------- datasets


def test_discrete_actions_outside_the_space_are_refused_in_one_line(tmp_path, capsys):
    """A Discrete action the space does not hold (a user's 0-based actions of a space with start 1,
    a corrupt file) crashed the first update with IndexError (cross-entropy) or RuntimeError (CQL's
    gather); the dataset is refused when built or loaded, and the CLI says so in one line."""
    data = collect("CartPole-v1", 200, None, seed=0)
    fields = dict(rewards=data.rewards, next_obs=data.next_obs, terminated=data.terminated, truncated=data.truncated,
                  env_id="CartPole-v1", observation_space=data.observation_space, action_space=data.action_space)
    for bad, shown in ((3, "3"), (-1, "-1"), (0.5, "0.5")):
        actions = data.actions.astype(type(bad)).copy()
        actions[7] = bad
        with pytest.raises(CanterError, match=f"dataset action {shown} \\(row 7, one of 1\\) is not in the action space"):
            TransitionDataset(data.obs, actions, **fields)
    with pytest.raises(CanterError, match="integers from 1 to 2"):  # 0-based actions of a space starting at 1
        TransitionDataset(data.obs, data.actions, **{**fields, "action_space": gym.spaces.Discrete(2, start=1)})
    shifted = TransitionDataset(data.obs, data.actions + 1, **{**fields, "action_space": gym.spaces.Discrete(2, start=1)})
    assert len(shifted) == 200
    # a file written with such actions (by an older canter, or by hand) is refused when training from it
    def edit(state):
        state["actions"] = np.where(np.arange(200) == 7, 5, state["actions"])

    code, err = _train_from_edited_dataset(tmp_path, capsys, data, "bc", edit)
    assert_one_line_error(code, err, "dataset action 5 (row 7", "Discrete(2)")
    assert not (tmp_path / "run").exists()


def test_discrete_observations_outside_the_space_are_refused_in_one_line(tmp_path, capsys):
    """A Discrete observation the space does not hold (FrozenLake's 20 of Discrete(16), a -1 marking a
    missing value) crashed the first update that sampled it with a RuntimeError traceback from the one-hot
    encoder ('Class values must be smaller than num_classes'), after the run directory was written; the
    dataset is refused when built or loaded, as Discrete actions are."""
    data = collect("FrozenLake-v1", 200, None, seed=0)
    fields = dict(actions=data.actions, rewards=data.rewards, terminated=data.terminated, truncated=data.truncated,
                  env_id="FrozenLake-v1", observation_space=data.observation_space, action_space=data.action_space)
    for name, bad in (("obs", 20), ("next_obs", -1), ("obs", 2.5)):
        arrays = {"obs": data.obs.astype(type(bad)), "next_obs": data.next_obs.astype(type(bad))}
        arrays[name][4] = bad
        with pytest.raises(CanterError, match=f"dataset {name} {bad} \\(row 4, one of 1\\) is not in the observation "
                                              f"space Discrete\\(16\\).* integers from 0 to 15"):
            TransitionDataset(**arrays, **fields)

    def edit(state):
        state["next_obs"] = np.where(np.arange(200) == 7, 16, state["next_obs"])

    code, err = _train_from_edited_dataset(tmp_path, capsys, data, "cql", edit)
    assert_one_line_error(code, err, "dataset next_obs 16 (row 7", "Discrete(16)")
    assert not (tmp_path / "run").exists()


def test_float_image_observations_become_the_pixels_the_encoder_scales():
    """Image observations given as floats of the same 0-255 pixels (a float32 array from another library) were
    kept as floats, which the convolutional encoders take as already scaled: training saw pixels 255 times larger
    than the uint8 frames the eval env gives (and the encoder divides by 255). They are stored as uint8 now, and
    floats that are not pixels ([0, 1] images) are refused in one line, as Agent.predict refuses them."""
    space = gym.spaces.Box(0, 255, (1, 8, 8), np.uint8)
    pixels = np.random.default_rng(0).integers(0, 256, (6, 1, 8, 8)).astype(np.uint8)
    fields = dict(actions=np.zeros(6, np.int64), rewards=np.zeros(6), terminated=np.zeros(6, bool),
                  truncated=np.zeros(6, bool), env_id="X-v0", observation_space=space,
                  action_space=gym.spaces.Discrete(2))
    data = TransitionDataset(obs=pixels.astype(np.float32), next_obs=pixels.astype(np.float64), **fields)
    assert data.obs.dtype == data.next_obs.dtype == np.uint8 and np.array_equal(data.obs, pixels)
    with pytest.raises(CanterError, match=r"dataset next_obs: image observations are uint8 pixel values 0..255.*"
                                          r"float32 values that are not \(min 0.0, max 1.0\)"):
        TransitionDataset(obs=pixels, next_obs=pixels.astype(np.float32) / 255, **fields)


def test_dict_and_tuple_observations_are_packed_as_the_env_gives_them(tmp_path):
    """A dataset built from a Dict env's own observations (a dict of arrays, or a list of dicts) was refused as
    'dataset arrays differ in length: obs has 2, rewards 3' (the Dict's entry count): found by the offline bug
    hunt. They are packed now into the vectors canter's env gives (its space), so such a dataset trains."""
    import canter
    from canter.envs.make import make_vec_env
    import image_dict_env  # noqa: F401  (registers DictImageCue-v0)

    env = gym.make("DictImageCue-v0", float_flip=True)
    raw = env.reset(seed=3)[0]
    vec = make_vec_env("image_dict_env:DictImageCue-v0", 1, "sync", {"float_flip": True})
    packed = vec.reset(seed=3)[0]
    fields = dict(actions=np.array([0, 1, 0]), rewards=np.ones(3), terminated=np.zeros(3, bool),
                  truncated=np.array([False, False, True]), observation_space=env.observation_space,
                  action_space=env.action_space, env_kwargs={"float_flip": True})
    data = TransitionDataset(obs={k: np.stack([v] * 3) for k, v in raw.items()}, next_obs=[raw] * 3,
                             env_id="image_dict_env:DictImageCue-v0", **fields)
    assert data.observation_space == vec.single_observation_space and data.obs.shape == (3, packed.size)
    assert np.array_equal(data.obs[1], packed) and np.array_equal(data.next_obs, data.obs)
    vec.close()
    data.save(tmp_path / "data")
    agent = canter.train("bc", dataset=tmp_path / "data", max_steps=2, gradient_steps=1, batch_size=2,
                         eval_episodes=1, run_dir=tmp_path / "run")
    assert agent.observation_space == data.observation_space
    with pytest.raises(CanterError, match=r"dataset obs row 0 is not an observation .*KeyError: 'flip'"):
        TransitionDataset(obs={"image": np.stack([raw["image"]] * 3)}, next_obs=[raw] * 3, env_id="X-v0", **fields)
    tuple_space = gym.spaces.Tuple((gym.spaces.Discrete(3), gym.spaces.Box(-1, 1, (2,))))
    data = TransitionDataset(obs=(np.array([0, 2, 1]), np.zeros((3, 2))), next_obs=[(1, np.ones(2))] * 3,
                             env_id="X-v0", **{**fields, "observation_space": tuple_space, "env_kwargs": {}})
    assert data.obs.tolist()[1] == [0, 0, 1, 0, 0] and data.next_obs.tolist()[0] == [0, 1, 0, 1, 1]


def test_rewards_and_flags_of_one_column_become_one_value_per_transition(tmp_path):
    """Rewards and terminal flags of shape [N, 1] (d3rlpy's layout) were taken as they were: a minibatch's
    rewards were then [B, 1] and CQL's TD target [B, B] (broadcast against [B] next values), a silently wrong
    loss. One column is one value per transition, so it is flattened; any other shape is refused in one line."""
    data = collect("CartPole-v1", 50, None, seed=0)
    spaces = dict(env_id="CartPole-v1", observation_space=data.observation_space, action_space=data.action_space)
    column = TransitionDataset(obs=data.obs, actions=data.actions, next_obs=data.next_obs, **spaces,
                               **{k: getattr(data, k).reshape(-1, 1) for k in ("rewards", "terminated", "truncated")})
    for name in ("rewards", "terminated", "truncated"):
        np.testing.assert_array_equal(getattr(column, name), getattr(data, name))
    import canter

    trainer = canter.make_trainer("cql", None, dataset=str(column.save(tmp_path / "column")), max_steps=1,
                                  batch_size=8, run_dir=None)
    trainer.setup()
    batch = trainer.agent.prepare_replay_batch(trainer.sample(8))
    assert tuple(trainer.agent.algorithm.td_target(batch).shape) == (8,)
    trainer.close()
    with pytest.raises(CanterError, match=r"dataset rewards have shape \(50, 2\); .* one value per transition"):
        TransitionDataset(obs=data.obs, actions=data.actions, next_obs=data.next_obs, terminated=data.terminated,
                          truncated=data.truncated, rewards=np.zeros((50, 2)), **spaces)
    # d3rlpy's Discrete actions [N, 1] were refused ('actions have shape (1,), but the action space has ()'; the
    # offline bug hunt), and so was a one-value Box action given flat: one value a row is taken either way
    column = TransitionDataset(**{**data.__dict__, "actions": data.actions.reshape(-1, 1), "dataset_id": None})
    np.testing.assert_array_equal(column.actions, data.actions)
    box = gym.spaces.Box(-2, 2, (1,), np.float32)
    flat = TransitionDataset(**{**data.__dict__, "actions": np.linspace(-2, 2, 50), "action_space": box})
    assert flat.actions.shape == (50, 1) and flat.actions[-1, 0] == 2


def _train_from_edited_dataset(tmp_path, capsys, data, algo: str, edit) -> tuple[int, str]:
    """Save ``data``, change its arrays with ``edit(state)`` as a file written by hand or by an older canter
    could hold them, and train ``algo`` from that file through the CLI: ``(exit code, stderr)``."""
    state, meta = load_checkpoint(data.save(tmp_path / "data"))
    edit(state)
    save_checkpoint(tmp_path / "bad", state, {k: v for k, v in meta.items() if k in ("kind", "env", "observation_space",
                                                                                 "action_space", "info", "env_kwargs")})
    code, _, err = run_cli(capsys, "train", algo, "--dataset", str(tmp_path / "bad"), "--max-steps", "10", "--quiet",
                           "--run-dir", str(tmp_path / "run"))
    return code, err


def test_non_finite_dataset_values_are_refused_in_one_line(tmp_path, capsys):
    """A NaN in a dataset's observations made training stop with 'training diverged ... try a lower
    learning rate' after writing a run directory; the dataset is refused when built or loaded."""
    data = collect("Pendulum-v1", 200, None, seed=0)
    arrays = {k: getattr(data, k).copy() for k in ("obs", "actions", "rewards", "next_obs", "terminated", "truncated")}
    spaces = dict(env_id="Pendulum-v1", observation_space=data.observation_space, action_space=data.action_space)
    for name, value in (("obs", np.nan), ("next_obs", np.inf), ("actions", np.nan), ("rewards", -np.inf)):
        bad = {k: v.copy() for k, v in arrays.items()}
        bad[name][9] = value
        with pytest.raises(CanterError, match=f"dataset {name} hold non-finite values .*row 9"):
            TransitionDataset(**bad, **spaces)
    code, err = _train_from_edited_dataset(tmp_path, capsys, data, "td3bc",
                                           lambda state: state["obs"].__setitem__((3, 1), np.nan))
    assert_one_line_error(code, err, "dataset obs hold non-finite values", "row 3")
    assert not (tmp_path / "run").exists()


def test_a_dataset_whose_tensors_are_gone_is_named_as_a_dataset(tmp_path, capsys):
    """Only the JSON left (a half-copied dataset): the error said 'checkpoint tensors not found', for a new
    run and for resuming one, though no checkpoint was missing."""
    collect("CartPole-v1", 200, None, seed=0).save(tmp_path / "data")
    run = tmp_path / "run"
    assert run_cli(capsys, "train", "bc", "--dataset", str(tmp_path / "data"), "--max-steps", "100", "--quiet",
                   "--run-dir", str(run))[0] == 0
    (tmp_path / "data.safetensors").unlink()
    for argv in (["train", "bc", "--dataset", str(tmp_path / "data"), "--run-dir", str(tmp_path / "new")],
                 ["train", "--resume", str(run), "--max-steps", "200"]):
        before = snapshot(tmp_path)
        code, _, err = run_cli(capsys, *argv, "--quiet")
        assert_one_line_error(code, err, "dataset tensors not found", "data.safetensors", "data.json is there")
        assert snapshot(tmp_path) == before


def test_a_directory_given_as_the_dataset_is_named_with_what_to_give(tmp_path, capsys):
    """A run directory, or a folder of datasets, given as --dataset (as other libraries take a dataset folder)
    was only 'dataset not found: RUN (expected RUN.safetensors and RUN.json ...)': the line now says it is a run
    to collect from, or names the datasets in the folder."""
    data = tmp_path / "data"
    data.mkdir()
    collect("CartPole-v1", 20, None, seed=0).save(data / "cartpole")
    (data / "notes.json").write_text("{}")
    run = tmp_path / "run"
    assert run_cli(capsys, "train", "bc", "--dataset", str(data / "cartpole"), "--max-steps", "10", "--quiet",
                   "--run-dir", str(run))[0] == 0
    for given, needles in ((run, ["is a run directory", f"canter collect {run} --out PATH"]),
                           (data, ["is a directory", f"its datasets: {data / 'cartpole'}"]),
                           (tmp_path / "run" / "checkpoints", ["is a directory holding no dataset"])):
        before = snapshot(tmp_path)
        code, _, err = run_cli(capsys, "train", "bc", "--dataset", str(given), "--quiet", "--run-dir", str(tmp_path / "new"))
        assert_one_line_error(code, err, "dataset not found", *needles)
        assert "notes" not in err and snapshot(tmp_path) == before


@pytest.mark.parametrize("given", [".", "./", "/", ".."])
def test_a_nameless_directory_given_as_the_dataset_is_one_line(tmp_path, capsys, monkeypatch, given):
    """'--dataset .' (or '/', './') was a ValueError traceback from pathlib ("PosixPath('.') has an empty name",
    found by a bug hunt); '..' said it expected '...safetensors'. Each is now the one line of a directory."""
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    collect("CartPole-v1", 20, None, seed=0).save("cartpole")
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, "train", "bc", "--dataset", given, "--quiet", "--run-dir", str(tmp_path / "new"))
    assert_one_line_error(code, err, "dataset not found", f"'{given}' is a directory")
    assert "..." not in err and snapshot(tmp_path) == before


def test_box_actions_outside_the_bounds_are_warned_about_once():
    """Actions beyond a Box's bounds were clipped into [-1, 1] without a word (a dataset scaled x3 trained as if fine)."""
    from canter.data.dataset import TransitionDataset
    from canter.errors import CanterWarning

    obs_space, act_space = gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Box(-2, 2, (1,), np.float32)
    n = 10
    obs = np.zeros((n, 3), np.float32)
    actions = np.linspace(-6, 6, n, dtype=np.float32).reshape(n, 1)
    with pytest.warns(CanterWarning, match="6 of 10 dataset actions lie outside the action space's bounds"):
        TransitionDataset(obs, actions, np.zeros(n, np.float32), obs, np.zeros(n, bool), np.zeros(n, bool),
                          "Pendulum-v1", obs_space, act_space)


def test_dataset_observation_statistics_never_copy_the_whole_dataset_to_float64():
    """normalize_obs concatenated obs and next_obs and cast them to float64 (8x a uint8 image dataset:
    226 GB for 1M Atari frames); the moments are now computed a chunk of rows at a time, as NumPy's."""
    import tracemalloc

    from canter.trainers.offline import dataset_obs_moments

    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (2000, 4, 16, 16), dtype=np.uint8)  # 2 MB; 16 MB as float64
    tracemalloc.start()
    mean, var, count = dataset_obs_moments((frames, frames[:500]), chunk_bytes=1 << 19)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 3 << 20, peak
    both = np.concatenate([frames, frames[:500]]).astype(np.float64)
    assert count == 2500
    np.testing.assert_allclose(mean, both.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(var, both.var(axis=0), rtol=1e-10)


def test_dataset_info_with_numpy_values_is_saved_and_other_objects_are_one_line(tmp_path):
    """info={'eps': np.float32(0.5)} was json's TypeError traceback from save, with nothing written."""
    data = collect("CartPole-v1", 20, None, seed=0)
    data.info = {"eps": np.float32(0.5), "steps": np.arange(3), "note": "ok"}
    data.save(tmp_path / "d")
    assert TransitionDataset.load(tmp_path / "d").info == {"eps": 0.5, "steps": [0, 1, 2], "note": "ok"}
    data.info = {"env": object()}
    with pytest.raises(CanterError, match=r"^dataset info holds <object object at .* \(type object\); it is saved as JSON"):
        data.save(tmp_path / "e")
    assert not list(tmp_path.glob("e*"))


@pytest.mark.parametrize("damage, needles", [
    ("flip", ["dataset", "data.safetensors is corrupt: its sha256 differs"]),
    ("bad-json", ["dataset metadata", "data.json is not valid JSON"]),
    ("garbage", ["dataset tensors", "data.safetensors are not a readable safetensors file"]),
    ("bad-space", ["dataset", "data is corrupt: unsupported space description"]),
])
def test_a_corrupt_dataset_is_called_a_dataset_and_named(tmp_path, capsys, damage, needles):
    """A damaged dataset file was reported with the checkpoint loader's words ('checkpoint ... is corrupt',
    'checkpoint metadata ... is not valid JSON'), though the user gave no checkpoint; a bad space description
    did not name the file."""
    import json

    collect("CartPole-v1", 20, None, seed=0).save(tmp_path / "data")
    tensors, meta = tmp_path / "data.safetensors", tmp_path / "data.json"
    if damage == "flip":
        blob = bytearray(tensors.read_bytes())
        blob[-5] ^= 1
        tensors.write_bytes(bytes(blob))
    elif damage == "bad-json":
        meta.write_text(meta.read_text()[:-10])
    elif damage == "garbage":
        tensors.write_bytes(b"garbage")
    else:
        write_checkpoint_json(meta, {**json.loads(meta.read_text()), "observation_space": {"type": "Nope"}})
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, "train", "bc", "--dataset", str(tmp_path / "data"), "--quiet",
                           "--run-dir", str(tmp_path / "new"))
    assert_one_line_error(code, err, *needles)
    assert "checkpoint" not in err and snapshot(tmp_path) == before


def test_a_large_dataset_or_checkpoint_loads_without_a_second_copy_of_its_tensors(tmp_path):
    """Loading read the file's bytes and then let safetensors copy every tensor out of them: a dataset needed twice
    its size in memory (peak 1.89x its arrays here; a 5.6 GB Atari dataset 11 GB), found by the offline bug hunt.
    The tensors are now views of the one buffer the file is read into (peak ~1.02x)."""
    import gc

    def status(key: str) -> int:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith(key))

    n, dim = 16000, 500
    obs = np.random.default_rng(0).random((n, dim), dtype=np.float32)
    TransitionDataset(obs=obs, next_obs=obs, actions=np.zeros(n, np.int64), rewards=np.zeros(n), terminated=np.zeros(n),
                      truncated=np.zeros(n), env_id="X-v0", observation_space=gym.spaces.Box(0, 1, (dim,), np.float32),
                      action_space=gym.spaces.Discrete(2)).save(tmp_path / "data")
    del obs
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:  # resets VmHWM, the peak resident memory
            f.write("5")
    except OSError:
        pytest.skip("needs Linux's /proc/self/clear_refs")
    before = status("VmRSS")
    data = TransitionDataset.load(tmp_path / "data")
    assert (status("VmHWM") - before) / (2 * n * dim * 4) < 1.4
    data.obs[0, 0] = 2.0  # writable, as before
    assert data.obs[0, 0] == 2.0 and data.next_obs[0, 0] != 2.0
