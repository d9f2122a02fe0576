"""Checkpoints: safetensors + JSON round trip, atomic writes of a pair, no unpickling, fresh-process equality
(canter.atomic's writes on their own: tests/test_atomic_writes.py)."""
import json
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import canter
from canter.checkpoint import flatten_state, load_checkpoint, save_checkpoint, unflatten_state
from canter.errors import CanterError


def _train(tmp_path, algo, env, **kw):
    run_dir = tmp_path / f"{algo}-run"
    canter.train(algo, env, run_dir=run_dir, eval_episodes=1, eval_every=0, **kw)
    return run_dir


def test_flatten_round_trip_keeps_structure():
    opt = torch.optim.Adam([torch.nn.Parameter(torch.ones(3))])
    opt.param_groups[0]["params"][0].grad = torch.ones(3)
    opt.step()
    tree = {"opt": opt.state_dict(), "arr": np.arange(4.0), "nested": [1, "a", None, {"x": 2.5}], "big": 2**70}
    skeleton, tensors = flatten_state(tree)
    json.dumps(skeleton)
    back = unflatten_state(json.loads(json.dumps(skeleton)), tensors)
    assert list(back["opt"]["state"].keys()) == [0]  # int keys survive JSON
    torch.testing.assert_close(back["opt"]["state"][0]["exp_avg"], opt.state_dict()["state"][0]["exp_avg"])
    np.testing.assert_array_equal(back["arr"], tree["arr"])
    assert back["nested"] == tree["nested"] and back["big"] == 2**70


def test_atomic_write_keeps_old_checkpoint_when_interrupted(tmp_path, monkeypatch):
    base = tmp_path / "ck"
    save_checkpoint(base, {"w": torch.ones(2)}, {"step": 1})
    before = (base.with_suffix(".safetensors").read_bytes(), base.with_suffix(".json").read_bytes())

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(base, {"w": torch.zeros(2)}, {"step": 2})
    monkeypatch.undo()
    assert (base.with_suffix(".safetensors").read_bytes(), base.with_suffix(".json").read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.json", "ck.safetensors"]  # no temp files left
    state, meta = load_checkpoint(base)
    assert meta["step"] == 1 and state["w"].tolist() == [1.0, 1.0]


def test_half_replaced_pair_loads_the_complete_tensors_file(tmp_path, monkeypatch):
    """A kill between the two renames leaves new tensors + old JSON: the tensors file's own copy wins."""
    base = tmp_path / "ck"
    save_checkpoint(base, {"w": torch.zeros(1)}, {"step": 1})
    real_replace = os.replace

    def replace_tensors_only(src, dst):
        if str(dst).endswith(".json"):
            os.unlink(src)
            raise KeyboardInterrupt  # "killed" after the tensors were renamed, before the JSON
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace_tensors_only)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(base, {"w": torch.ones(1)}, {"step": 2})
    monkeypatch.undo()
    assert json.loads(base.with_suffix(".json").read_text())["step"] == 1  # the JSON is one save behind
    state, meta = load_checkpoint(base)
    assert meta["step"] == 2 and state["w"].tolist() == [1.0]
    save_checkpoint(base, {"w": torch.full((1,), 3.0)}, {"step": 3})  # the next save repairs the pair
    assert load_checkpoint(base)[1]["step"] == 3


def test_a_tensors_file_whose_json_was_never_renamed_loads_by_name(tmp_path):
    """The first save of a name killed between the renames leaves only NAME.safetensors, complete with its
    header's JSON; load_checkpoint reads it, but canter.load / canter eval said 'no such run directory or
    checkpoint' for that name (and took 'last' for the run directory)."""
    run_dir = _train(tmp_path, "ppo", "CartPole-v1", max_steps=256, n_envs=2, n_steps=64)
    best = run_dir / "checkpoints" / "best"
    best.with_suffix(".json").unlink()
    for path in (best, best.with_suffix(".safetensors"), run_dir):
        agent = canter.load(path)
        assert agent.metadata["step"] == 256 and agent.predict(np.zeros(4, np.float32)) in (0, 1)


def test_pair_from_two_checkpoints_is_refused(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    save_checkpoint(a, {"w": torch.ones(1)}, {"step": 1})
    save_checkpoint(b, {"w": torch.zeros(1)}, {"step": 2})
    b.with_suffix(".safetensors").write_bytes(a.with_suffix(".safetensors").read_bytes())
    with pytest.raises(CanterError, match="do not belong together"):
        load_checkpoint(b)


@pytest.mark.parametrize("drop_sha", [False, True])
def test_changed_tensors_are_refused_also_when_the_json_lost_its_sha256(tmp_path, drop_sha):
    """A JSON without its sha256 (deleted by hand) skipped the integrity check: changed tensors loaded."""
    b = tmp_path / "b"
    save_checkpoint(b, {"w": torch.full((4,), 1.0)}, {"step": 1})
    st = b.with_suffix(".safetensors")
    blob = bytearray(st.read_bytes())
    blob[-1] ^= 0x01  # the last byte of the last tensor's data: still a valid float
    st.write_bytes(bytes(blob))
    if drop_sha:
        meta = json.loads(b.with_suffix(".json").read_text())
        del meta["sha256"]
        b.with_suffix(".json").write_text(json.dumps(meta))
    with pytest.raises(CanterError, match="has no sha256" if drop_sha else "is corrupt"):
        load_checkpoint(b)


def test_mismatched_pair_without_embedded_metadata_is_refused(tmp_path):
    from safetensors.torch import save_file

    b = tmp_path / "b"
    save_checkpoint(b, {"w": torch.zeros(1)}, {})
    save_file({"w": torch.ones(1)}, str(b.with_suffix(".safetensors")), metadata={"format": "canter-checkpoint",
                                                                                 "checkpoint_id": "other"})
    with pytest.raises(CanterError, match="do not belong together"):
        load_checkpoint(b)


def test_loading_never_unpickles(tmp_path, monkeypatch):
    run_dir = _train(tmp_path, "ppo", "CartPole-v1", max_steps=256, n_envs=2, n_steps=64)

    def forbidden(*a, **k):
        raise AssertionError("unpickling during load")

    monkeypatch.setattr(pickle, "loads", forbidden)
    monkeypatch.setattr(pickle, "load", forbidden)
    monkeypatch.setattr(torch, "load", forbidden)
    agent = canter.load(run_dir)
    assert agent.predict(np.zeros((1, 4), np.float32)).shape == (1,)


def test_run_dir_contents(tmp_path):
    run_dir = _train(tmp_path, "ppo", "CartPole-v1", max_steps=512, n_envs=2, n_steps=64, checkpoint_every=256)
    names = {p.name for p in (run_dir / "checkpoints").iterdir()}
    assert {"best.json", "best.safetensors", "last.json", "last.safetensors",
            "step-000000256.json", "step-000000256.safetensors"} <= names
    # the grid's last point is the run's last step: saved too (it was left out on the record that ends the run)
    assert {"step-000000512.json", "step-000000512.safetensors"} <= names
    meta = json.loads((run_dir / "checkpoints" / "last.json").read_text())
    for key in ("algorithm", "env", "observation_space", "action_space", "step", "canter_version", "git_commit"):
        assert key in meta
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in ("algorithm", "env", "seed", "steps", "wall_seconds", "best_eval_return", "last_eval_return",
                "target_reward", "solved"):
        assert key in summary
    import pyarrow.parquet as pq

    hist = pq.read_table(run_dir / "history.parquet")
    assert hist.column_names == ["step", "wall_time", "episode_return", "episode_length", "rolling_return"]
    assert hist.num_rows > 0 and (run_dir / "config.yaml").exists()
    assert any(p.name.startswith("events.out.tfevents") for p in run_dir.iterdir())


SCRIPT = """
import sys, numpy as np, canter
agent = canter.load(sys.argv[1])
obs = np.load(sys.argv[2])
print(agent.predict(obs).astype(np.float64).tobytes().hex())
"""


@pytest.mark.parametrize("algo, env, kw", [
    ("ppo", "CartPole-v1", dict(max_steps=512, n_envs=2, n_steps=64)),
    ("ppo", "Pendulum-v1", dict(max_steps=512, n_envs=2, n_steps=64, normalize_obs=True)),
    ("dqn", "CartPole-v1", dict(max_steps=600, learning_starts=100, train_freq=4, gradient_steps=1, net_arch=[32], exploration_fraction=0.5)),
])
def test_fresh_process_gives_identical_deterministic_actions(tmp_path, algo, env, kw):
    run_dir = _train(tmp_path, algo, env, **kw)
    agent = canter.load(run_dir / "checkpoints" / "last")
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(64,) + agent.observation_space.shape).astype(np.float32)
    np.save(tmp_path / "obs.npy", obs)
    expected = agent.predict(obs).astype(np.float64).tobytes().hex()
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(run_dir / "checkpoints" / "last"), str(tmp_path / "obs.npy")],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected


def test_full_disk_during_a_save_names_the_file_and_keeps_the_old_checkpoint(tmp_path, monkeypatch):
    """ENOSPC from write/fsync carries no file name: it used to reach the CLI as a traceback (exit 1)."""
    import errno

    base = tmp_path / "ck"
    save_checkpoint(base, {"w": torch.ones(2)}, {"step": 1})

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as info:
        save_checkpoint(base, {"w": torch.zeros(2)}, {"step": 2})
    monkeypatch.undo()
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(base) + ".safetensors"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck.json", "ck.safetensors"]
    state, meta = load_checkpoint(base)
    assert meta["step"] == 1 and state["w"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("text", ['{"format": "canter-checkpoint", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
                                  '{"format": "canter-checkpoint", "step": ' + "9" * 5000 + "}"], ids=["deep", "huge_int"])
def test_metadata_json_too_deep_or_with_a_huge_integer_is_a_one_line_error(tmp_path, text):
    """json.loads raised RecursionError / ValueError (int digits limit): 'canter eval' showed a traceback."""
    base = tmp_path / "ck"
    save_checkpoint(base, {"w": torch.ones(1)}, {"step": 1})
    (tmp_path / "ck.json").write_text(text)
    with pytest.raises(CanterError, match="not valid JSON"):
        load_checkpoint(base)


def test_multidiscrete_start_and_dtype_survive_a_checkpoint():
    """QMIX's joint action space carries the agents' ``start``: a loaded agent acted shifted without it."""
    import gymnasium as gym

    from canter.envs.spaces import space_from_dict, space_to_dict, spaces_match

    for space in (gym.spaces.MultiDiscrete([3, 3], start=[1, 1]), gym.spaces.MultiDiscrete([2, 5], dtype=np.int32),
                  gym.spaces.MultiDiscrete([4])):
        back = space_from_dict(json.loads(json.dumps(space_to_dict(space))))
        assert back.nvec.tolist() == space.nvec.tolist() and back.start.tolist() == space.start.tolist()
        assert back.dtype == space.dtype
    assert not spaces_match(gym.spaces.MultiDiscrete([3, 3], start=[1, 1]), gym.spaces.MultiDiscrete([3, 3]))
    assert space_to_dict(gym.spaces.MultiDiscrete([4])) == {"type": "MultiDiscrete", "nvec": [4]}  # as older runs


def test_large_boxes_with_non_uniform_bounds_survive_a_checkpoint():
    """A flattened Dict of a 5,000-value vector and a Discrete (bounds -1/1 then 0/1), and a large Box
    with a bound per value: once "cannot serialise a large Box space with non-uniform bounds" at the
    run's first checkpoint, so such envs could not train at all."""
    import gymnasium as gym

    from canter.envs.packing import ObservationPacker
    from canter.envs.spaces import space_from_dict, space_to_dict, spaces_match

    flat_dict = ObservationPacker(gym.spaces.Dict({"a": gym.spaces.Box(-1, 1, (5000,)), "b": gym.spaces.Discrete(2)}),
                                  gym.spaces.Discrete(2)).space
    per_value = gym.spaces.Box(np.zeros((50, 100), np.float32), np.arange(1, 5001, dtype=np.float32).reshape(50, 100))
    unbounded = gym.spaces.Box(np.r_[np.full(5000, -np.inf), 0.0].astype(np.float32), np.inf, (5001,), np.float32)
    for space in (flat_dict, per_value, unbounded):
        d = json.loads(json.dumps(space_to_dict(space)))
        back = space_from_dict(d)
        assert back.shape == space.shape and back.dtype == space.dtype and spaces_match(space, back)
        np.testing.assert_array_equal(back.low, space.low)
        np.testing.assert_array_equal(back.high, space.high)
    assert len(json.dumps(space_to_dict(flat_dict))) < 300  # runs of equal bounds (and the two entries), not 5,002 numbers


def test_integer_boxes_keep_their_extreme_bounds_through_a_checkpoint():
    """An int64 Box over the dtype's whole range (counters): its high, 2**63 - 1, is 2**63 as a JSON
    float, and came back wrapped round to -2**63 (a loaded agent's space had low == high == -2**63)."""
    import gymnasium as gym

    from canter.envs.spaces import space_from_dict, space_to_dict

    for dtype in (np.int64, np.uint64, np.int32, np.uint8):
        info = np.iinfo(dtype)
        space = gym.spaces.Box(info.min, info.max, (2,), dtype)
        back = space_from_dict(json.loads(json.dumps(space_to_dict(space))))
        assert back.dtype == space.dtype
        np.testing.assert_array_equal(back.low, space.low)
        np.testing.assert_array_equal(back.high, space.high)


def test_weights_of_another_dtype_are_refused_not_converted():
    """A checkpoint holding int8 weights (its sha256 valid) loaded as silently converted floats: the agent
    evaluated 9 where the real checkpoint got 500."""
    from pathlib import Path

    import torch

    from canter.api import load_agent_state
    from canter.errors import CanterError

    agent = canter.train("ppo", "CartPole-v1", run_dir=None, max_steps=128, n_envs=2, n_steps=64, eval_every=0)
    state = {"agent": agent.state_dict()}
    modules = state["agent"]["algorithm"]["modules"]
    part = next(iter(modules))
    name = next(iter(modules[part]))
    modules[part][name] = modules[part][name].to(torch.int8)
    with pytest.raises(CanterError, match=rf"does not fit the model .*{part}.{name} is torch.int8, the model's is "
                                          r"torch.float32"):
        load_agent_state(agent, state, Path("ckpt"))


def test_a_file_of_a_run_directory_is_answered_with_the_run_directory_to_pass(tmp_path):
    """`canter eval RUN_DIR/config.yaml` said 'no such run directory or checkpoint' although the file exists;
    the error now names the run directory to pass instead."""
    from canter.checkpoint import find_checkpoint

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text("algo: ppo\n")
    (run / "checkpoints" / "notes.txt").write_text("x")
    (tmp_path / "other.yaml").write_text("x: 1\n")
    for path in (run / "config.yaml", run / "checkpoints" / "notes.txt"):
        with pytest.raises(CanterError, match=f"is neither a run directory nor a checkpoint; pass its run directory "
                                              f"'{re.escape(str(run))}'"):
            find_checkpoint(path)
    with pytest.raises(CanterError, match="is neither a run directory nor a checkpoint; pass a run directory"):
        find_checkpoint(tmp_path / "other.yaml")
    with pytest.raises(CanterError, match="no such run directory or checkpoint"):
        find_checkpoint(tmp_path / "missing")


def test_resume_of_a_checkpoint_or_the_checkpoints_folder_names_the_run_directory(tmp_path):
    """`canter train --resume RUN_DIR/checkpoints/last` said 'no such run directory' (the checkpoint's files exist)
    and `--resume RUN_DIR/checkpoints` 'has no checkpoints/last'; both now name the run directory to pass."""
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text("algo: ppo\n")
    (run / "checkpoints" / "last.json").write_text("{}")
    (run / "checkpoints" / "last.safetensors").write_bytes(b"")
    with pytest.raises(CanterError, match=f"is a checkpoint, not a run directory; pass its run directory "
                                          f"'{re.escape(str(run))}'"):
        canter.resume(run / "checkpoints" / "last")
    with pytest.raises(CanterError, match=f"is a checkpoints folder, not a run directory; pass its run directory "
                                          f"'{re.escape(str(run))}'"):
        canter.resume(run / "checkpoints")


def test_plot_report_and_resume_name_the_run_directory_of_a_file_given_instead(tmp_path):
    """`canter plot / report RUN_DIR/config.yaml` and `canter train --resume RUN_DIR/config.yaml` said
    'no such run directory' although the file exists; they now name the run directory to pass."""
    from canter.tools.rundata import load_run

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("algo: ppo\n")
    for load in (load_run, canter.resume):
        with pytest.raises(CanterError, match=f"is not a run directory; pass its run directory "
                                              f"'{re.escape(str(run))}'"):
            load(run / "config.yaml")
        with pytest.raises(CanterError, match="no such run directory: "):
            load(tmp_path / "missing")


def test_plot_report_and_resume_name_the_run_directory_of_a_checkpoint_given_instead(tmp_path):
    """`canter report RUN_DIR/checkpoints/best` (a checkpoint as eval and play take it) said 'no such run
    directory', as if nothing were there; it now names the run directory to pass."""
    from canter.tools.rundata import load_run

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text("algo: ppo\n")
    (run / "checkpoints" / "best.json").write_text("{}")
    hint = f"is a checkpoint, not a run directory; pass its run directory '{re.escape(str(run))}'"
    for load in (load_run, canter.resume):
        with pytest.raises(CanterError, match=hint):
            load(run / "checkpoints" / "best")


def test_save_checkpoint_streams_arrays_without_copying_them_in_memory(tmp_path):
    """Saving built the whole safetensors file as bytes (after cloning every array): ~3x a replay buffer's
    size on top of it (a 500 MiB array: +1.5 GB peak), enough to run out of memory at the first checkpoint of
    an Atari replay buffer. The file is now streamed from the arrays' memory."""
    import tracemalloc

    big = np.arange(16 * 2**20, dtype=np.uint8)  # 16 MiB
    tracemalloc.start()
    try:
        save_checkpoint(tmp_path / "ck", {"buffer": {"obs": big}}, {"step": 1})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 2**20, peak  # was ~16 MiB more: the file's bytes object
    state, _ = load_checkpoint(tmp_path / "ck")
    assert np.array_equal(state["buffer"]["obs"], big)


def test_save_checkpoint_of_one_array_twice_saves_both(tmp_path):
    """Arrays are saved from their own memory now; the same array (or a view of all of it) twice in a state
    shares that memory, which safetensors refuses, so the second is copied."""
    a = np.arange(12, dtype=np.float32)
    save_checkpoint(tmp_path / "ck", {"a": a, "b": a, "c": a[:], "d": a[2:5]}, {})
    state, _ = load_checkpoint(tmp_path / "ck")
    for key, want in (("a", a), ("b", a), ("c", a), ("d", a[2:5])):
        assert np.array_equal(state[key], want), key


def test_save_checkpoint_on_a_full_disk_raises_the_os_error_and_keeps_the_old_checkpoint(tmp_path, monkeypatch):
    """safetensors reports a failed write as SafetensorError with the OS error's number in its text; it is
    raised as the OSError it is (ENOSPC naming the checkpoint file, which the run's one-line message needs),
    and the checkpoint already there stays whole."""
    import errno

    from safetensors import SafetensorError

    from canter import checkpoint as ck

    save_checkpoint(tmp_path / "ck", {"w": torch.ones(3)}, {"step": 1})
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def full(tensors, filename, metadata=None):
        Path(filename).write_bytes(b"partial")
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr(ck, "st_save_file", full)
    with pytest.raises(OSError) as info:
        save_checkpoint(tmp_path / "ck", {"w": torch.zeros(3)}, {"step": 2})
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(tmp_path / "ck.safetensors")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # no temporary file left either


def test_load_of_a_runs_summary_json_names_the_run_directory_and_weights_only_must_be_a_bool(tmp_path):
    """`canter.load('RUN/summary.json')` (or `canter eval` of it) said only 'is not a canter checkpoint';
    ``weights_only='no'`` (a truthy string) restored the whole state."""
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text("algo: ppo\n")
    (run / "summary.json").write_text('{"steps": 1}')
    with pytest.raises(CanterError, match=f"is not a canter checkpoint; pass its run directory '{re.escape(str(run))}'"):
        canter.load(run / "summary.json")
    with pytest.raises(CanterError, match="weights_only must be True or False, got 'no'"):
        canter.load(run, weights_only="no")


def test_a_missing_checkpoint_name_is_answered_with_the_closest_saved_ones(tmp_path):
    """``canter.load('RUN/checkpoints/step-1024')`` (the run writes step-000001024) or a misspelled 'bset' said
    'no such run directory or checkpoint' and named none of the checkpoints there."""
    from canter.checkpoint import find_checkpoint

    ckpts = tmp_path / "checkpoints"
    ckpts.mkdir()
    for name in ("best", "last", "step-000001024", "step-000002048"):
        (ckpts / f"{name}.json").write_text("{}")
    for given, near in (("step-1024", "/step-000001024'"), ("step-2048.json", "/step-000002048'"),
                        ("step-1500", "/step-000001024' or .*/step-000002048'"), ("bset", "/best'( or .*)?")):
        with pytest.raises(CanterError, match=rf"no such run directory or checkpoint: .*; did you mean .*{near}\?"):
            find_checkpoint(ckpts / given)
    with pytest.raises(CanterError, match=r"checkpoint: '[^']*zzz'$"):
        find_checkpoint(ckpts / "zzz")


def test_a_mistyped_run_directory_is_answered_with_the_closest_run_directories(tmp_path):
    """``canter eval runs/ppo-CartPole-v1-20261127-140521`` (a digit off) or ``--resume runs/pp`` said only 'no such
    run directory' and named none of the runs beside it; the closest run directories are now named (folders that
    are not runs, without config.yaml or checkpoints/, never)."""
    from canter.checkpoint import find_checkpoint, no_run_dir

    runs = tmp_path / "runs"
    for name, part in (("ppo-CartPole-v1-20261127-140512", "config.yaml"), ("dqn-CartPole-v1-20261127-141000",
                                                                              "checkpoints"), ("ppo-notes", None)):
        (runs / name).mkdir(parents=True)
        if part == "config.yaml":
            (runs / name / part).write_text("algo: ppo\n")
        elif part:
            (runs / name / part).mkdir()
    ppo = f"did you mean '{runs / 'ppo-CartPole-v1-20261127-140512'}'"
    with pytest.raises(CanterError, match=rf"checkpoint: '.*140521'; {ppo}"):  # the closest first
        find_checkpoint(runs / "ppo-CartPole-v1-20261127-140521")
    given = runs / "ppo-CartPole-v1-20261127-14051"
    assert f"directory: '{given}'; {ppo}" in str(no_run_dir(given))
    assert "ppo-notes" not in str(no_run_dir(runs / "ppo-note"))
    assert str(no_run_dir(runs / "zzz")) == f"no such run directory: '{runs / 'zzz'}'"
