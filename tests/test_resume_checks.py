"""What a run or a resume checks before it touches anything: failed setups, run directories,
one-line CLI errors, checkpoint files (pickles, truncated or mismatched tensors, hand-edited metadata) and
the saved config."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

import canter
from canter.checkpoint import load_checkpoint, read_metadata
from canter.cli import main
from canter.errors import CanterError
from checkpoint_support import write_checkpoint_json


@pytest.mark.parametrize("given", ["new", "nested", "empty", "auto"])
def test_a_run_whose_setup_fails_leaves_no_half_written_directory(tmp_path, capsys, monkeypatch, given):
    """The directories the run made are removed (an empty run directory was left behind, and with
    'auto' an empty runs/ too); an empty directory it was given stays."""
    monkeypatch.chdir(tmp_path)
    run_dir = {"new": tmp_path / "run", "nested": tmp_path / "a" / "b" / "run", "empty": tmp_path / "run"}.get(given)
    if given == "empty":
        run_dir.mkdir()
    code = main(["train", "dqn", "--env", "CartPole-v1", "--set", "buffer_size=10000000000000", "--quiet",
                 *([] if run_dir is None else ["--run-dir", str(run_dir)])])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "lower hparams.buffer_size" in err, err
    assert [p.name for p in tmp_path.iterdir()] == (["run"] if given == "empty" else [])
    if given == "empty":
        assert list(run_dir.iterdir()) == []


def test_a_run_dir_through_a_missing_directory_and_dotdot_is_checked_as_it_resolves(tmp_path, capsys, monkeypatch):
    """'new/../kept' is 'kept' once 'new' is made: its files refuse it as any non-empty run directory
    (the check saw a path that did not exist, and the failed setup's cleanup deleted 'kept' whole)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "notes.txt").write_text("precious")
    code = main(["train", "dqn", "--env", "CartPole-v1", "--set", "buffer_size=10000000000000", "--quiet",
                 "--run-dir", "new/../kept"])
    err = capsys.readouterr().err
    assert code == 2 and "not empty" in err, err
    assert (tmp_path / "kept" / "notes.txt").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept"]


@pytest.mark.parametrize("argv, needle", [
    (["--resume", "/nonexistent/run"], "no such run directory"),
    (["--resume", "{tmp}"], "no checkpoints/last"),
    (["--resume", "{tmp}", "--seed", "3"], "only --max-steps"),
    (["--resume"], "expected one argument"),
])
def test_resume_cli_errors_are_one_line(tmp_path, capsys, argv, needle):
    code = main(["train", *[a.format(tmp=tmp_path) for a in argv]])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and needle in err, err


# -- refusing bad checkpoint files ----------------------------------------------------------------


@pytest.fixture(scope="module")
def good_run(finished_ppo_run):
    return finished_ppo_run


def test_resume_dataset_of_a_run_that_learns_from_its_env_is_one_line(good_run, capsys):
    from support import snapshot

    before = snapshot(good_run)
    code = main(["train", "--resume", str(good_run), "--max-steps", "512", "--dataset", "data", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "learns from its env: drop --dataset" in err, err
    assert snapshot(good_run) == before


class Evil:
    """Unpickling this runs ``os.system``: the loader must never get that far."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def copy_checkpoint(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True)
    for suffix in (".json", ".safetensors"):
        (dst / f"last{suffix}").write_bytes((src / "checkpoints" / f"last{suffix}").read_bytes())
    return dst / "last"


@pytest.mark.parametrize("which", ["safetensors", "json", "torch-zip"])
def test_pickled_checkpoint_files_are_refused_and_never_run(good_run, tmp_path, capsys, which):
    import pickle

    import torch

    base = copy_checkpoint(good_run, tmp_path / "ck")
    marker = tmp_path / "executed"
    if which == "torch-zip":
        torch.save({"x": Evil(marker)}, base.with_suffix(".safetensors"))
    else:
        base.with_suffix(f".{which}").write_bytes(pickle.dumps(Evil(marker)))
    with pytest.raises(CanterError, match="not a readable safetensors|not valid JSON"):
        canter.load(base)
    code = main(["eval", str(base), "--episodes", "1"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1
    assert not marker.exists()


def test_truncated_safetensors_is_refused(good_run, tmp_path):
    base = copy_checkpoint(good_run, tmp_path / "ck")
    blob = base.with_suffix(".safetensors").read_bytes()
    for cut in (8, len(blob) // 2, len(blob) - 1):
        base.with_suffix(".safetensors").write_bytes(blob[:cut])
        with pytest.raises(CanterError, match="last.safetensors"):
            load_checkpoint(base)


@pytest.mark.parametrize("space", [
    {"type": "Box", "shape": "abc", "dtype": "float32", "low": 0, "high": 1},
    {"type": "Box", "shape": [4], "dtype": "not-a-dtype", "low": 0, "high": 1},
    {"type": "Discrete", "n": -3},
    {"type": "Teleporter"},
    ["not", "a", "mapping"],
    {"type": "Box", "shape": [7], "dtype": "float32", "low": -1, "high": 1},  # valid, but not the model's
    {"type": "Box", "shape": [4], "dtype": "float32", "low": -1, "high": 1, "layout": "not a list of entries"},
])
def test_checkpoint_json_with_wrong_spaces_is_refused(good_run, tmp_path, capsys, space):
    base = copy_checkpoint(good_run, tmp_path / "ck")
    meta = json.loads(base.with_suffix(".json").read_text())
    meta["observation_space"] = space
    write_checkpoint_json(base.with_suffix(".json"), meta)
    with pytest.raises(CanterError, match="observation_space|does not fit"):
        canter.load(base)
    code = main(["eval", str(base), "--episodes", "1"])
    assert code == 2 and len(capsys.readouterr().err.splitlines()) == 1


def test_checkpoint_naming_a_non_algorithm_class_is_refused(good_run, tmp_path):
    base = copy_checkpoint(good_run, tmp_path / "ck")
    meta = json.loads(base.with_suffix(".json").read_text())
    for key, value in (("algo", "builtins:print"), ("model", "os:system"), ("agent", "subprocess:Popen")):
        bad = json.loads(json.dumps(meta))
        bad["config"][key] = value
        write_checkpoint_json(base.with_suffix(".json"), bad)
        with pytest.raises(CanterError, match=f"'{value}' is not an? (algorithm|model|agent) class"):
            canter.load(base)
    # the encoder a model builds is named in hparams; it is called with (space, ortho_init=...) and was not
    # checked first, so a function named there ran before the error
    bad = json.loads(json.dumps(meta))
    bad["config"]["hparams"]["encoder"] = "os:system"
    write_checkpoint_json(base.with_suffix(".json"), bad)
    with pytest.raises(CanterError, match="'os:system' is not an encoder class"):
        canter.load(base)


def test_weights_that_do_not_fit_the_model_are_refused_in_one_line(good_run, tmp_path, capsys):
    """A checkpoint whose tensors another architecture wrote (an older canter's dueling heads, say):
    load and eval say so in one line; resume refuses before writing anything."""
    import shutil

    from support import snapshot

    run_dir = tmp_path / "run"
    shutil.copytree(good_run, run_dir)
    meta_path = run_dir / "checkpoints" / "last.json"
    meta = json.loads(meta_path.read_text())
    meta["config"]["hparams"]["net_arch"] = [32, 32]  # the model it describes is not the one saved
    write_checkpoint_json(meta_path, meta)
    with pytest.raises(CanterError, match="does not fit the model its config describes"):
        canter.load(run_dir / "checkpoints" / "last")
    before = snapshot(run_dir)
    assert main(["train", "--resume", str(run_dir), "--max-steps", "512", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "does not fit the model" in err, err
    assert snapshot(run_dir) == before


def _set(path: str, value):
    def edit(meta):
        node = meta
        for key in path.split(".")[:-1]:
            node = node[key]
        node[path.split(".")[-1]] = value
    return edit


@pytest.mark.parametrize("edit, needle", [
    (_set("step", "abc"), "'step' must be a number, got 'abc'"),
    (_set("resumes", "x"), "'resumes' must be a number"),
    (_set("config", 3), "'config' is not a mapping"),
    (_set("state.trainer.counters", {}), "'state.trainer.counters.step' must be a number, got null"),
    (_set("state.trainer.rng.python", [1, 2]), "'state.trainer.rng.python' must be Python's random state"),
    # these were tracebacks (TypeError, AttributeError, ValueError from NumPy or torch), some after training began
    (_set("stop_reason", [1]), "'stop_reason' must be a string or null, got [1]"),
    (_set("history_rows.history", [1]), "'history_rows.history' must be a row count"),
    (_set("state.trainer.counters.next_eval", "x"), "'state.trainer.counters.next_eval' must be an integer or null"),
    (_set("state.trainer.counters.next_eval", 5), "'state.trainer.counters.next_eval' must be null for a run with "
                                                  "eval_every 0"),  # the resumed run hung, adding 0 to it
    (_set("state.trainer.counters.best_eval_return", [1]), "'state.trainer.counters.best_eval_return' must be a "),
    (_set("state.trainer.last_eval", "x"), "'state.trainer.last_eval' must be an evaluation or null"),
    (_set("state.trainer.recent_successes", None), "'state.trainer.recent_successes' must be a list of numbers"),
    (_set("state.trainer.hooks.TargetReward#0", 1), "'state.trainer.hooks.TargetReward#0' must be a mapping"),
    (_set("state.trainer.lr.raw", "x"), "'state.trainer.lr.raw' must be a mapping of numbers"),
    (_set("state.trainer.guard", None), "'state.trainer.guard' must be a mapping, got null"),
    (_set("state.trainer.guard.restores", None), "'state.trainer.guard.restores' must be an integer"),
    (_set("state.trainer.env", "x"), "'state.trainer.env' must be a mapping or null"),
    (_set("state.trainer.rng.numpy", None), "'state.trainer.rng.numpy' must be NumPy's random state"),
    (_set("state.trainer.rng.torch", [1]), "'state.trainer.rng.torch' must be torch's random state"),
    (_set("state.trainer.rollout.pos", "x"), "'state.trainer.rollout' must be a rollout's state"),
    # found as the trainer restores its state
    (_set("state.trainer.obs", "x"), "'state.trainer.obs' must be the env's observations, of shape (2, 4)"),
    (_set("state.trainer.obs", None), "'state.trainer.obs' must be the env's observations"),
    (_set("state.trainer.env.env", "x"), "'state.trainer.env.env' must be an object, as the env has it, got a string"),
    (_set("state.trainer.env._ep_return", "x"), "'state.trainer.env._ep_return' must be a number or array, as the env"),
    (_set("state.trainer.rollout", {"pos": 5}), "its trainer state was edited or is corrupt (KeyError: 'obs')"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_hand_edited_resume_metadata_is_one_line_and_touches_nothing(good_run, tmp_path, capsys, edit, needle):
    """A last.json with such fields (a step that is no number, trainer counters gone, a mapping or a random state
    of another type) was a traceback (exit 1), some after a new event file was written. The line names the file
    and the field. (A .json edited by hand alone is refused first, as differing from its .safetensors copy,
    test_checkpoint_integrity.py: these are written to both, as a checkpoint holding them would be.)"""
    import shutil

    from support import snapshot

    run_dir = tmp_path / "run"
    shutil.copytree(good_run, run_dir)
    meta_path = run_dir / "checkpoints" / "last.json"
    meta = json.loads(meta_path.read_text())
    edit(meta)
    write_checkpoint_json(meta_path, meta)
    before = snapshot(run_dir)
    assert main(["train", "--resume", str(run_dir), "--max-steps", "512", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"checkpoint {run_dir / 'checkpoints' / 'last'} cannot be resumed" in err, err
    assert needle in err, err
    assert snapshot(run_dir) == before


def test_a_resume_refuses_an_edited_config_yaml_and_keeps_the_edit(tmp_path, capsys):
    """--resume continues with the config saved in checkpoints/last; an edit to config.yaml (lr 0.5) was ignored
    without a word, and the resumed run rewrote the file with the old lr, so the edit was lost too."""
    from support import snapshot

    run_dir = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=64, n_envs=1, eval_episodes=1,
                 sets=["n_steps=64", "n_epochs=1"])
    text = (run_dir / "config.yaml").read_text()
    (run_dir / "config.yaml").write_text(text.replace("  lr: 0.00166\n", "  lr: 0.5\n"))
    before = snapshot(run_dir)
    assert main(["train", "--resume", str(run_dir), "--max-steps", "128", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "config.yaml was edited since the run wrote it ('hparams.lr' differs" in err
    assert snapshot(run_dir) == before
    from canter.resume_checks import check_config_unedited

    saved = read_metadata(run_dir / "checkpoints" / "last")["config"]
    (run_dir / "config.yaml").write_text(text.replace("max_steps: 64\n", "max_steps: 128\n"))  # a resume's rewrite
    check_config_unedited(run_dir, saved)
    # an earlier canter wrote the string '1e1' unquoted; it reads back as the number 10.0 now: no edit
    (run_dir / "config.yaml").write_text(text.replace("\nenv_kwargs: {}\n", "\nenv_kwargs:\n  g: 1e1\n"))
    check_config_unedited(run_dir, {**saved, "env_kwargs": {"g": "1e1"}})
    # ... and inside a list too (a callback's arguments; env_kwargs' lists), where it was refused as an edit
    old = {"env_kwargs": {"gs": ["1e1", {"g": "2e1"}]}, "callbacks": [{"EarlyStopping": {"min_delta": "1e-3"}}]}
    (run_dir / "config.yaml").write_text(yaml.safe_dump({**saved, **old}, sort_keys=False))
    check_config_unedited(run_dir, {**saved, **old})
    (run_dir / "config.yaml").write_text(yaml.safe_dump({**saved, **old, "env_kwargs": {"gs": ["1e1", {"g": 3}]}}))
    with pytest.raises(CanterError, match="'env_kwargs.gs' differs"):  # an edit inside a list is still one
        check_config_unedited(run_dir, {**saved, **old})


@pytest.mark.parametrize("damage, needle", [
    # a truncated file with a hand edit that is a YAML error (an unclosed list: malformed wherever the cut falls; a
    # cut alone may leave valid YAML, which the edit check then answers)
    (lambda t: t[: len(t) // 2] + "\nlr: [1e-3,", "malformed YAML in"),
    (lambda t: "", "is empty, not the config the run wrote"),  # was: 'None on None, seed None' are of different runs
    (lambda t: "- a list\n", "must hold a YAML mapping"),
])
def test_a_damaged_config_yaml_is_refused_in_one_line_and_kept(good_run, tmp_path, capsys, damage, needle):
    """A config.yaml that no longer read as a mapping was taken as missing: --resume trained and rewrote it from
    the checkpoint, so a hand edit with a YAML error (or the damaged file) was lost without a word."""
    from support import assert_one_line_error, snapshot

    run_dir = tmp_path / "run"
    shutil.copytree(good_run, run_dir)
    path = run_dir / "config.yaml"
    path.write_text(damage(path.read_text()))
    before = snapshot(run_dir)
    code = main(["train", "--resume", str(run_dir), "--max-steps", "512", "--quiet"])
    assert_one_line_error(code, capsys.readouterr().err, str(path), needle, "delete it to have it written again")
    assert snapshot(run_dir) == before
    path.unlink()  # a missing config.yaml is written again from checkpoints/last
    canter.resume(run_dir, max_steps=320)
    assert yaml.safe_load(path.read_text())["max_steps"] == 320


def test_a_run_saved_with_exponent_strings_in_its_callbacks_resumes(tmp_path):
    """A canter before exponent forms were numbers read 'min_delta: 1e-3' in a 'callbacks' entry as the string
    '1e-3' (its callbacks took it through float()) and saved it so; EarlyStopping now refuses a string, so
    such a run did not resume ('min_delta must be a number >= 0, got '1e-3'')."""
    run_dir = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=64, n_envs=1, eval_episodes=1,
                 sets=["n_steps=64", "n_epochs=1", "batch_size=64",
                       "callbacks=[{canter.callbacks:EarlyStopping: {patience: 9, min_delta: 0.001}}]"])
    meta_path = run_dir / "checkpoints" / "last.json"
    meta = json.loads(meta_path.read_text())
    meta["config"]["callbacks"] = [{"canter.callbacks:EarlyStopping": {"patience": 9, "min_delta": "1e-3"}}]
    write_checkpoint_json(meta_path, meta)  # as the earlier canter saved it, and wrote config.yaml:
    (run_dir / "config.yaml").write_text(yaml.safe_dump(meta["config"], sort_keys=False))
    assert main(["train", "--resume", str(run_dir), "--max-steps", "128", "--quiet"]) == 0
    assert read_metadata(run_dir / "checkpoints" / "last")["step"] == 128
    from canter.resume_checks import as_numbers_now

    assert as_numbers_now([{"my_pkg:Tagger": {"tag": "1e3"}}]) == [{"my_pkg:Tagger": {"tag": "1e3"}}]  # as given


@pytest.mark.parametrize("budget, needle", [
    ({"max_steps": "100"}, "; max_steps must be more than its 256 steps to extend it, got 100"),
    ({"max_steps": "512"}, None),
    ({"max_seconds": "1"}, "pass max_steps=N to extend it"),
])
def test_resume_takes_budgets_as_strings_as_train_does(good_run, tmp_path, budget, needle):
    """``canter.train(max_steps='512')`` is read as YAML reads it; ``canter.resume(max_steps='512')`` compared the
    string with the step count and raised a TypeError traceback (``max_seconds='1'``: a ValueError formatting it)."""
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(good_run, run_dir)
    if needle is None:
        canter.resume(run_dir, **budget)
        assert json.loads((run_dir / "summary.json").read_text())["steps"] == 512
    else:
        with pytest.raises(CanterError, match=needle):
            canter.resume(run_dir, **budget)


@pytest.mark.parametrize("read_only", ["run", "checkpoints"])
def test_resuming_a_run_that_cannot_be_written_is_refused_before_training(good_run, tmp_path, monkeypatch, read_only):
    """A read-only run directory failed on its lock's temp file; a read-only checkpoints/ trained up to the first
    checkpoint and failed to save it. Both are refused first, naming the directory."""
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(good_run, run_dir)
    blocked = run_dir if read_only == "run" else run_dir / "checkpoints"
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != blocked and real_access(path, mode))
    before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()}
    with pytest.raises(CanterError, match=f"cannot resume '{run_dir}': '{blocked}' is not writable"):
        canter.resume(run_dir, max_steps=512)
    assert {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file()} == before


def test_a_checkpoint_copied_from_another_run_is_named_as_such(good_run, tmp_path, capsys):
    """A DQN run's checkpoints/last copied into a PPO run was refused because 'history.parquet has 8 rows but the
    checkpoint expects 17', which does not say what is wrong; the error now names both runs."""
    import shutil

    from support import snapshot

    run_dir, other = tmp_path / "run", tmp_path / "other"
    shutil.copytree(good_run, run_dir)
    canter.train("dqn", "CartPole-v1", run_dir=other, max_steps=200, learning_starts=50, eval_episodes=1,
                 eval_every=0, tensorboard=False)
    for suffix in (".json", ".safetensors"):
        shutil.copy(other / "checkpoints" / f"last{suffix}", run_dir / "checkpoints" / f"last{suffix}")
    before = snapshot(run_dir)
    assert main(["train", "--resume", str(run_dir), "--max-steps", "512", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "(dqn on CartPole-v1, seed 0) and " in err, err
    assert "(ppo on CartPole-v1, seed 0) are of different runs" in err, err
    assert snapshot(run_dir) == before


def test_a_step_checkpoint_copied_over_last_is_named_for_what_it_is(good_run, tmp_path, capsys):
    """Rolling a run back by copying its best (or a step-N) checkpoint over last (neither holds trainer state) was
    refused as 'written by an older canter'; the error now says such a checkpoint is for loading only."""
    import shutil

    run_dir = tmp_path / "run"
    shutil.copytree(good_run, run_dir)
    for suffix in (".json", ".safetensors"):
        shutil.copy(run_dir / "checkpoints" / f"best{suffix}", run_dir / "checkpoints" / f"last{suffix}")
    assert main(["train", "--resume", str(run_dir), "--max-steps", "512", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "copied over last is for loading only" in err, err


def test_a_resume_removes_the_temp_files_of_killed_saves_and_keeps_files_of_ones_own(good_run, tmp_path):
    """Resuming removed every '.*.tmp' in the run directory and checkpoints/: a user's '.notes.tmp' was deleted
    with the temp files that a kill in the middle of an atomic write leaves."""
    run_dir = tmp_path / "run"
    shutil.copytree(good_run, run_dir)
    own = [run_dir / ".notes.tmp", run_dir / "checkpoints" / ".todo.tmp", run_dir / ".my.data.tmp"]
    killed = [run_dir / ".history.parquet.k2j4h5g6.tmp", run_dir / "checkpoints" / ".last.safetensors.a_9bc1de.tmp",
              run_dir / ".summary.json.x1y2z3w4.tmp"]
    for p in own + killed:
        p.write_text("text")
    canter.resume(run_dir, max_steps=320)
    assert all(p.read_text() == "text" for p in own) and not any(p.exists() for p in killed)


def test_a_run_saved_before_a_config_key_existed_resumes_twice(tmp_path):
    """A run whose checkpoints predate a run key or hyperparameter (here max_policy_lag, hparams.clip_range_vf) is
    resumed: the resumed run writes config.yaml with the key's value when it starts. Killed before its next
    'last', a second resume compared that file with the old checkpoint's config, which lacks the key, and refused
    it as a hand edit ("'max_policy_lag' differs"). A value other than the one resuming takes is still an edit."""
    from canter.config import resolve_config, resolved_dict
    from canter.resume_checks import check_config_unedited

    run_dir = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=64, n_envs=1, eval_episodes=1, tensorboard=False,
                 sets=["n_steps=64", "n_epochs=1", "batch_size=64"])
    meta_path = run_dir / "checkpoints" / "last.json"
    meta = json.loads(meta_path.read_text())
    del meta["config"]["max_policy_lag"], meta["config"]["hparams"]["clip_range_vf"]  # as an older canter saved it
    write_checkpoint_json(meta_path, meta)
    written = yaml.safe_load((run_dir / "config.yaml").read_text())  # as the resumed run rewrote it, with both keys
    old = {k: v for k, v in written.items() if k != "max_policy_lag"}  # as the older canter wrote it: no edit
    (run_dir / "config.yaml").write_text(yaml.safe_dump({**old, "hparams": {k: v for k, v in old["hparams"].items()
                                                                            if k != "clip_range_vf"}}, sort_keys=False))
    check_config_unedited(run_dir, meta["config"], (), resolved_dict(*resolve_config("ppo", "CartPole-v1")))
    (run_dir / "config.yaml").write_text(yaml.safe_dump({**written, "max_policy_lag": 3}, sort_keys=False))
    with pytest.raises(CanterError, match="'max_policy_lag' differs"):  # not what resuming takes: an edit
        canter.resume(run_dir, max_steps=128)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(written, sort_keys=False))
    canter.resume(run_dir, max_steps=128)
    assert read_metadata(run_dir / "checkpoints" / "last")["step"] == 128


@pytest.mark.parametrize("name, columns, needle", [
    ("history", {"r": 1.0, "l": 10, "t": 0.1}, "it has no 'step' column (columns: r, l, t)"),
    ("history", {"step": "a", "wall_time": 0.0, "episode_return": 1.0, "episode_length": 1, "rolling_return": 1.0},
     "its 'step' column holds string, not int64"),
    ("updates", {"step": 1, "loss": 0.5}, "it has no 'wall_time' column"),
])
def test_a_history_file_of_another_format_is_refused_in_one_line_and_kept(good_run, tmp_path, capsys, name, columns,
                                                                         needle):
    """A history.parquet that another tool wrote in a run's place (as many rows as 'last' expects) was resumed as
    rows of nulls, the other tool's rows overwritten, exit 0; one whose step column held text failed with a pyarrow
    traceback (ArrowInvalid). Both are now one line naming the file and the column, and nothing is written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from support import snapshot

    run_dir = tmp_path / "run"
    shutil.copytree(good_run, run_dir)
    n = read_metadata(run_dir / "checkpoints" / "last")["history_rows"][name] + 5
    assert n > 5
    pq.write_table(pa.table({k: [v] * n for k, v in columns.items()}), run_dir / f"{name}.parquet")
    before = snapshot(run_dir)
    assert main(["train", "--resume", str(run_dir), "--max-steps", "512", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"{name}.parquet is not a table canter wrote: {needle}" in err, err
    assert snapshot(run_dir) == before
