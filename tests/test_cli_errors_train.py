"""``canter train`` given bad input: exit code 2, exactly one ``canter: error:`` line, no traceback, and
nothing half-written: unknown names and bad values, config files, run directories, a missing extra."""
from __future__ import annotations

import os
import sys

import pytest

from support import TINY_ARGV as TINY
from support import assert_one_line_error, run_cli, snapshot


TRAIN_CASES = {
    "unknown-algorithm": (["train", "ppo2", "--env", "CartPole-v1"], ["'ppo'"]),
    "unknown-env": (["train", "ppo", "--env", "CartPol-v1"], ["'CartPole-v1'"]),
    "dqn-continuous": (["train", "dqn", "--env", "Pendulum-v1"], ["Discrete action space"]),
    "unknown-set-key": (["train", "ppo", "--env", "CartPole-v1", "--set", "lrr=0.1"], ["'lr'"]),
    "unknown-nested-set-key": (
        ["train", "ppo", "--env", "CartPole-v1", "--set", "hparams.n_step=4"], ["'hparams.n_step'", "'hparams.n_steps'"]
    ),
    "wrong-type": (["train", "ppo", "--env", "CartPole-v1", "--set", "lr=abc"], ["lr", "float", "abc"]),
    "out-of-range": (["train", "ppo", "--env", "CartPole-v1", "--set", "lr=-1"], ["lr", "-1"]),
    "zero-envs": (["train", "ppo", "--env", "CartPole-v1", "--n-envs", "0"], ["n_envs", ">= 1"]),
    "no-env": (["train", "ppo"], ["--env"]),
}


@pytest.mark.parametrize("argv,needles", list(TRAIN_CASES.values()), ids=list(TRAIN_CASES))
def test_train_bad_input(capsys, workdir, argv, needles):
    code, out, err = run_cli(capsys, *argv, "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, *needles)
    assert not (workdir / "run").exists()
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("argv,needles", [TRAIN_CASES["unknown-algorithm"], TRAIN_CASES["dqn-continuous"]],
                         ids=["unknown-algorithm", "dqn-continuous"])
def test_train_bad_input_auto_run_dir_writes_nothing(capsys, workdir, argv, needles):
    """Without --run-dir the default runs/<...> directory must not be created either."""
    code, out, err = run_cli(capsys, *argv)
    assert_one_line_error(code, err, *needles)
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("algo", ["trpo", "npg"])
def test_trust_region_on_images_says_why_it_is_refused(capsys, workdir, algo):
    """The actor and critic share the CNN encoder that images get: not the user's choice of a shared trunk."""
    pytest.importorskip("ale_py")
    code, _, err = run_cli(capsys, "train", algo, "--env", "ALE/Pong-v5", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "both read one learned encoder (a CNN for images): train ppo or a2c")
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("argv,see", [
    (["train", "trpo", "--env", "CartPole-v1", "--set", "shared_trunk=true"], "'canter train trpo --help' lists the hyperparameters"),
    (["train", "ppo", "--env", "Zqxjwv-v9"], "gymnasium.pprint_registry()"),
    # an env registered in the user's __main__ (trained in a script, evaluated by canter eval) got only close ids
    (["train", "ppo", "--env", "MyEnv-v0"], "an env of your own is found when a module the run imports registers it"),
    # 'canter list' shows registered names, not a module's attributes
    (["train", "ppo", "--env", "CartPole-v1", "--set", "encoder=canter.models:Zqxjwv"],
     "unknown name in module 'canter.models' 'Zqxjwv'"),
], ids=["config-key", "env-id", "own-env", "module-attribute"])
def test_unknown_name_without_a_close_match_says_where_the_names_are(capsys, workdir, argv, see):
    """'canter list' shows algorithms, models, agents, canter's envs and presets, not config keys or
    Gymnasium's ids; the hint pointed there ('68 choices; run 'canter list' to see them')."""
    code, _, err = run_cli(capsys, *argv, "--run-dir", str(workdir / "run"))
    line = assert_one_line_error(code, err, see)
    assert "'canter list' to see them" not in line
    assert not (workdir / "run").exists()


def test_empty_run_dir_is_refused_not_replaced_by_auto(capsys, workdir):
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--run-dir", "")
    assert_one_line_error(code, err, "--run-dir needs a directory path")
    assert list(workdir.iterdir()) == []


def test_malformed_yaml_names_line(capsys, workdir):
    bad = workdir / "bad.yaml"
    bad.write_text("a: [1, 2\nb: 3\n")
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "-f", str(bad),
                             "--run-dir", str(workdir / "run"))
    line = assert_one_line_error(code, err, "bad.yaml", "line 2")
    assert "YAML" in line
    assert sorted(p.name for p in workdir.iterdir()) == ["bad.yaml"]


def test_missing_config_file(capsys, workdir):
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "-f", str(workdir / "nope.yaml"),
                             "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "nope.yaml")
    assert list(workdir.iterdir()) == []


def test_existing_nonempty_run_dir_is_untouched(capsys, workdir):
    run_dir = workdir / "existing"
    (run_dir / "sub").mkdir(parents=True)
    (run_dir / "notes.txt").write_bytes(b"precious\x00bytes\n")
    (run_dir / "sub" / "data.bin").write_bytes(os.urandom(64))
    before = snapshot(run_dir)
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *TINY, "--run-dir", str(run_dir))
    assert_one_line_error(code, err, "already exists")
    assert snapshot(run_dir) == before
    assert sorted(p.name for p in workdir.iterdir()) == ["existing"]


def test_train_run_dir_under_a_file_is_one_line(capsys, workdir):
    """A --run-dir that cannot be created (a file in its path) is refused before anything is written."""
    (workdir / "notes.txt").write_text("precious\n")
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *TINY,
                             "--run-dir", str(workdir / "notes.txt" / "run"))
    assert_one_line_error(code, err, "notes.txt", "not a directory")
    assert sorted(p.name for p in workdir.iterdir()) == ["notes.txt"]
    assert (workdir / "notes.txt").read_text() == "precious\n"


def test_train_run_dir_that_is_a_file_says_so(capsys, workdir):
    (workdir / "notes.txt").write_text("precious\n")
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *TINY,
                             "--run-dir", str(workdir / "notes.txt"))
    assert_one_line_error(code, err, "notes.txt", "is a file")
    assert (workdir / "notes.txt").read_text() == "precious\n"


def test_train_run_dir_that_cannot_be_written_is_one_line(capsys, workdir, monkeypatch):
    """An OSError while creating the run directory (read-only or full disk) is one line, not a traceback."""
    import canter.logging.tensorboard as tb

    def refuse(self, *a, **k):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(tb.Path, "mkdir", refuse)
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *TINY, "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "Permission denied")


def test_record_every_without_video_extra_leaves_no_run_dir(capsys, workdir, monkeypatch):
    """A missing extra is reported before anything is written (no stray TensorBoard file)."""
    monkeypatch.setitem(sys.modules, "moviepy", None)  # import moviepy -> ImportError
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *TINY, "--record-every", "128",
                             "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "canter[video]")
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("where", ["config-file", "set-list"])
def test_integer_too_long_to_read_is_one_line(capsys, workdir, where):
    """PyYAML's int() of a digit string longer than Python's limit (4300) raised a ValueError traceback."""
    digits = "1" * 5000
    if where == "config-file":
        (workdir / "c.yaml").write_text(f"seed: {digits}\n")
        argv = ["-f", str(workdir / "c.yaml")]
    else:
        argv = ["--set", f"net_arch=[64, {digits}]"]
    before = snapshot(workdir)
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *argv, "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "an integer with more than")
    assert snapshot(workdir) == before


@pytest.mark.parametrize("algo, env", [("bc", ["--env", "CartPole-v1"]), ("cql", ["--env", "CartPole-v1"]),
                                       ("bc", []), ("bc", ["--set", "dataset= "])])
def test_empty_dataset_path_is_one_line(capsys, workdir, algo, env):
    """--dataset '' reached Path('').with_name(...): a ValueError traceback ('PosixPath('.') has an empty name');
    without --env it said 'no environment given' instead of naming the empty --dataset."""
    code, _, err = run_cli(capsys, "train", algo, *env, "--dataset", "", "--quiet", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "--dataset needs a dataset path")
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("run_dir", ["", "  "])
def test_api_empty_run_dir_is_refused_not_the_current_directory(workdir, run_dir):
    """The CLI refuses --run-dir ''; canter.train(run_dir='') wrote the run into the current directory."""
    import canter
    from canter.errors import CanterError

    with pytest.raises(CanterError, match="run_dir needs a directory path"):
        canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=256, n_envs=2, n_steps=64, eval_episodes=1)
    assert list(workdir.iterdir()) == []


def test_empty_config_file_path_is_refused_not_ignored(capsys, workdir):
    """-f '' was taken as no config file: the run went ahead without the config the user meant to give."""
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *TINY, "-f", "",
                           "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "-f/--config needs a config file path")
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("command, path", [("train", ""), ("train", "  "), ("tune", "  ")])
def test_an_empty_config_file_path_without_an_algorithm_says_so(capsys, workdir, command, path):
    """With no algorithm, -f '' looked for the file's algo (fff7ebb, a2db5df) and said "no algorithm given, and  has
    no 'algo' key: name it, canter train ALGO -f  (...)", the path blank in the sentence."""
    code, _, err = run_cli(capsys, command, "--env", "CartPole-v1", "-f", path)
    assert_one_line_error(code, err, "-f/--config needs a config file path, got '")
    assert list(workdir.iterdir()) == []


def test_help_with_a_config_file_that_names_no_algorithm_is_the_help(capsys, tmp_path):
    """canter train -f FILE --help, FILE without 'algo', printed the help until fff7ebb; then it was the error 'no
    algorithm given, and FILE has no 'algo' key' (a file that names one still shows its algorithm's flags)."""
    plain, named = tmp_path / "plain.yaml", tmp_path / "named.yaml"
    plain.write_text("seed: 3\n")
    named.write_text("algo: dqn\n")
    code, out, err = run_cli(capsys, "train", "-f", str(plain), "--help")
    assert (code, err) == (0, "") and out.startswith("usage: canter train")
    code, out, _ = run_cli(capsys, "train", "-f", str(named), "--help")
    assert code == 0 and "--exploration-fraction" in out


def test_a_second_config_file_is_refused_not_silently_replacing_the_first(capsys, workdir):
    """-f a.yaml --config b.yaml trained with b.yaml alone (a's seed: 5 was dropped without a word), while the
    imports of a.yaml, read before the arguments were parsed, were imported (an error from a file not used)."""
    (workdir / "a.yaml").write_text("seed: 5\n")
    (workdir / "imp.yaml").write_text("imports: [no_such_module_xyz]\n")
    for files in (["-f", "a.yaml", "--config", "imp.yaml"], ["-f", "imp.yaml", "-fa.yaml"]):
        code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *files,
                               "--run-dir", str(workdir / "run"))
        assert_one_line_error(code, err, "-f/--config is given twice")
        assert not (workdir / "run").exists()


def test_a_run_dir_path_that_is_not_utf8_is_refused_before_training(capsys, workdir):
    """A --run-dir of bytes that are not UTF-8 (a Latin-1 'café' made by another tool) trained and wrote its
    files, but nothing could read them back: canter eval, play and train --resume failed on the checkpoint
    ('... is not valid UTF-8', safetensors), canter plot and report with a UnicodeEncodeError traceback
    (pyarrow). It is refused in one line before anything is written."""
    bad = os.fsdecode(os.fsencode(str(workdir)) + b"/caf\xe9")
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--quiet", "--run-dir", bad)
    assert_one_line_error(code, err, "is not valid UTF-8", "choose another --run-dir")
    assert list(workdir.iterdir()) == []
