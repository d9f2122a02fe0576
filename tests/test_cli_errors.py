"""Bad input to the ``canter`` command: exit code 2, exactly one ``canter: error:`` line, no traceback,
and nothing half-written (no run directory, existing files untouched)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from canter.cli import main

TINY = ["--max-steps", "256", "--n-envs", "2", "--set", "n_steps=64", "--eval-episodes", "1", "--quiet"]


# ---------------------------------------------------------------------------------------------- helpers


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    """Run ``canter ARGV`` in-process; return (exit code, stdout, stderr)."""
    capsys.readouterr()  # drop anything printed before
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's --help exits through sys.exit
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, err: str, *needles: str) -> str:
    """Exit 2, one stderr line starting with 'canter: error:', no traceback, containing every needle."""
    assert code == 2, f"exit code {code}, stderr: {err!r}"
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, f"expected exactly one stderr line, got {len(lines)}: {err!r}"
    line = lines[0]
    assert line.startswith("canter: error:"), line
    for needle in needles:
        assert needle in line, f"{needle!r} not in {line!r}"
    return line


def assert_train_refused(capsys: pytest.CaptureFixture, tmp_path: Path, argv: list[str], needle: str) -> None:
    """``canter ARGV --quiet --run-dir <tmp>/run`` fails in one line naming ``needle`` and writes no run directory."""
    code, _, err = run_cli(capsys, *argv, "--quiet", "--run-dir", str(tmp_path / "run"))
    assert_one_line_error(code, err, needle)
    assert not (tmp_path / "run").exists()


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (relative) -> its bytes (None for directories)."""
    return {
        str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
        for p in sorted(root.rglob("*"))
    }


def train_tiny(capsys: pytest.CaptureFixture, run_dir: Path, *extra: str) -> None:
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *TINY, "--run-dir", str(run_dir), *extra)
    assert code == 0, err
    assert (run_dir / "checkpoints" / "best.json").exists()
    assert (run_dir / "checkpoints" / "last.json").exists()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two tiny PPO CartPole runs (different seeds), trained once for the whole module."""
    root = tmp_path_factory.mktemp("runs")
    a, b = root / "a", root / "b"
    for d, seed in ((a, "0"), (b, "1")):
        code = main(["train", "ppo", "--env", "CartPole-v1", *TINY, "--seed", seed, "--run-dir", str(d)])
        assert code == 0
        assert (d / "checkpoints" / "best.json").exists()
    return a, b


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty current directory, so an 'auto' run dir (runs/...) would show up here."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# ---------------------------------------------------------------------------------------------- train


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


def test_unknown_subcommand_suggests_train(capsys):
    code, out, err = run_cli(capsys, "trian")
    assert_one_line_error(code, err, "'train'")


def test_train_help_lists_hyperparameters(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # no wrapping inside "(default: 0.2)"
    code, out, err = run_cli(capsys, "train", "ppo", "--help")
    assert code == 0, err
    assert "--clip-range" in out
    assert "default: 0.2" in out
    assert "PPO hyperparameters" in out
    assert err == ""
    assert "with --env" not in out and "Give --env with --help" in out


def test_train_help_with_env_shows_the_presets_values(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--help")
    assert code == 0, err
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip().startswith("--")}
    assert "(default: 2048; with --env CartPole-v1: 32)" in lines["--n-steps"]  # configs/ppo/CartPole-v1.yaml
    assert "with --env" not in lines["--clip-range"]  # the preset keeps the default 0.2
    # and the run values it sets (they were not shown): n_envs 16, target_reward 475, eval_every 4096
    assert "parallel environments (with --env CartPole-v1: 16)" in out
    assert "stop at this mean evaluation return (with --env CartPole-v1: 475.0)" in out
    assert "evaluate every N env steps (with --env CartPole-v1: 4096)" in out
    assert "with --env" not in lines["--seed"] and "with --env" not in out.split("--env ENV", 1)[1].split("\n")[0]


def test_train_help_names_the_choices_of_a_hyperparameter(capsys, monkeypatch):
    """'--activation STR  hidden activation (default: relu)' did not say which values are valid."""
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = run_cli(capsys, "train", "dqn", "--help")
    assert code == 0, err
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip().startswith("--")}
    assert "hidden activation: tanh, relu, elu, gelu, silu (default: relu)" in lines["--activation"]
    assert "(the same episode's later steps, its last step, or any of its steps): future, final, episode" in (
        lines["--her-strategy"])
    code, out, err = run_cli(capsys, "train", "ppo", "--help")
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip().startswith("--")}
    assert lines["--lr-schedule"].endswith("constant or linear (to 0) (default: constant)")  # named in its doc


# ---------------------------------------------------------------------------------------------- eval / play


@pytest.mark.parametrize("cmd", ["eval", "play"])
def test_missing_run_dir(capsys, tmp_path, cmd):
    code, out, err = run_cli(capsys, cmd, str(tmp_path / "does-not-exist"))
    assert_one_line_error(code, err, "does-not-exist")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("cmd", ["eval", "play"])
@pytest.mark.parametrize("kind", ["empty", "random-files"])
def test_not_a_canter_run(capsys, tmp_path, cmd, kind):
    d = tmp_path / "notarun"
    d.mkdir()
    if kind == "random-files":
        (d / "a.txt").write_text("hello\n")
        (d / "b.json").write_text('{"x": 1}\n')
        (d / "checkpoints").mkdir()
        (d / "checkpoints" / "junk.bin").write_bytes(os.urandom(32))
    before = snapshot(d)
    code, out, err = run_cli(capsys, cmd, str(d))
    assert_one_line_error(code, err, "notarun")
    assert snapshot(d) == before


@pytest.mark.parametrize("cmd", ["eval", "play"])
def test_spaces_do_not_match(capsys, runs, cmd):
    good, _ = runs
    before = snapshot(good)
    code, out, err = run_cli(capsys, cmd, str(good), "--env", "Acrobot-v1", "--episodes", "1")
    line = assert_one_line_error(code, err, "do not match", "Acrobot-v1")
    assert "spaces" in line
    assert snapshot(good) == before


@pytest.mark.parametrize("cmd", ["eval", "play"])
def test_spaces_that_differ_only_in_bounds_say_which_bound(capsys, runs, monkeypatch, cmd):
    """Spaces of one shape and dtype whose bounds differ were refused with the same description twice
    ("trained on Box(shape=(4,), float32) -> Discrete(2), env has Box(shape=(4,), float32) -> Discrete(2)")."""
    import gymnasium as gym
    import numpy as np

    from canter.registry import _REGISTRY

    def wider_cartpole() -> gym.Env:
        env = gym.make("CartPole-v1")
        high = env.observation_space.high.copy()
        high[0] = 9.0
        space = gym.spaces.Box(-high, high, dtype=np.float32)
        return gym.wrappers.TransformObservation(env, lambda o: o, observation_space=space)

    monkeypatch.setitem(_REGISTRY["env"], "CanterTestWiderCartPole-v0", wider_cartpole)
    good, _ = runs
    code, out, err = run_cli(capsys, cmd, str(good), "--env", "CanterTestWiderCartPole-v0", "--episodes", "1")
    assert_one_line_error(code, err, "do not match", "bounds differ: observation low[0]", "vs -9.0")


def test_eval_json_on_good_run(capsys, runs):
    good, _ = runs
    code, out, err = run_cli(capsys, "eval", str(good), "--json", "--episodes", "2")
    assert code == 0, err
    lines = out.strip().splitlines()
    assert len(lines) == 1, out
    obj = json.loads(lines[0])
    assert isinstance(obj, dict)
    assert {"mean_return", "std_return", "episodes"} <= set(obj)
    assert obj["episodes"] == 2
    assert isinstance(obj["mean_return"], float) and isinstance(obj["std_return"], float)


@pytest.mark.parametrize("cmd", ["eval", "play"])
def test_env_kwargs_reach_the_env_of_eval_and_play(capsys, runs, cmd):
    """--env-kwargs: eval, play and collect had no way to pass env arguments (``--env`` dropped the run's)."""
    good, _ = runs
    code, out, err = run_cli(capsys, cmd, str(good), "--env-kwargs", "{max_episode_steps: 7}", "--episodes", "2",
                             *(["--json"] if cmd == "eval" else []))
    assert code == 0, err
    if cmd == "eval":
        assert json.loads(out)["lengths"] == [7, 7]  # CartPole cut at 7 steps (a tiny policy lasts longer)
    else:
        assert out.splitlines() == ["episode 1: return 7.00", "episode 2: return 7.00"]
    for bad, problem in (("[1]", "needs a YAML mapping"), ("{a: [", "cannot parse")):
        code, out, err = run_cli(capsys, cmd, str(good), "--env-kwargs", bad)
        assert_one_line_error(code, err, "--env-kwargs", problem)


def test_collect_env_kwargs_reach_the_env_and_the_dataset(capsys, tmp_path):
    from canter.data.dataset import TransitionDataset

    code, out, err = run_cli(capsys, "collect", "--env", "CartPole-v1", "--env-kwargs", "{max_episode_steps: 5}",
                             "--transitions", "20", "--out", str(tmp_path / "d"))
    assert code == 0, err
    data = TransitionDataset.load(tmp_path / "d")
    assert data.env_kwargs == {"max_episode_steps": 5} and data.truncated.sum() >= 3  # every episode cut at 5


def test_eval_bad_episodes(capsys, runs):
    good, _ = runs
    code, out, err = run_cli(capsys, "eval", str(good), "--episodes", "0")
    assert_one_line_error(code, err, "--episodes")


def test_checkpoint_pair_from_two_runs(capsys, runs, tmp_path):
    """last.json of one run next to best.safetensors of another: refused, not silently loaded."""
    a, b = runs
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    shutil.copy(a / "checkpoints" / "last.json", ckpt / "last.json")
    shutil.copy(b / "checkpoints" / "best.safetensors", ckpt / "last.safetensors")
    for target in (ckpt / "last", ckpt / "last.json", ckpt / "last.safetensors"):
        code, out, err = run_cli(capsys, "eval", str(target), "--episodes", "1")
        assert_one_line_error(code, err, "do not belong together")
        assert out == ""


@pytest.mark.parametrize("damage", ["truncated", "garbage", "missing"])
def test_corrupt_checkpoint_tensors(capsys, runs, tmp_path, damage):
    a, _ = runs
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    shutil.copy(a / "checkpoints" / "last.json", ckpt / "last.json")
    blob = (a / "checkpoints" / "last.safetensors").read_bytes()
    if damage == "truncated":
        (ckpt / "last.safetensors").write_bytes(blob[: len(blob) // 3])
    elif damage == "garbage":
        (ckpt / "last.safetensors").write_bytes(b"not a safetensors file at all")
    code, out, err = run_cli(capsys, "eval", str(ckpt / "last.json"), "--episodes", "1")
    assert_one_line_error(code, err, "last.safetensors")
    assert out == ""


def test_corrupt_checkpoint_json(capsys, runs, tmp_path):
    a, _ = runs
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    shutil.copy(a / "checkpoints" / "last.safetensors", ckpt / "last.safetensors")
    (ckpt / "last.json").write_text('{"format": "canter-checkpoint", "state": [1, 2\n')
    code, out, err = run_cli(capsys, "eval", str(ckpt / "last"), "--episodes", "1")
    assert_one_line_error(code, err, "last.json")


class _WideEnv:
    """A one-step env whose 40-dim Box has per-dimension bounds (numpy prints such arrays over several lines)."""

    def __new__(cls, continuous_actions: bool = False, unbounded: bool = False):
        import gymnasium as gym
        import numpy as np

        low = np.arange(40, dtype=np.float32) / 7
        box = gym.spaces.Box(low, low + 1)

        class Wide(gym.Env):
            observation_space = box
            action_space = (gym.spaces.Box(-np.inf, np.inf, (2,)) if unbounded else
                            box if continuous_actions else gym.spaces.Discrete(2))

            def reset(self, seed=None, options=None):
                super().reset(seed=seed)
                return low.copy(), {}

            def step(self, action):
                return low.copy(), 0.0, True, False, {}

        return Wide()


@pytest.fixture
def wide_envs(monkeypatch):
    from canter.registry import _REGISTRY

    monkeypatch.setitem(_REGISTRY["env"], "CanterTestWide-v0", lambda: _WideEnv())
    monkeypatch.setitem(_REGISTRY["env"], "CanterTestWideBox-v0", lambda: _WideEnv(continuous_actions=True))
    monkeypatch.setitem(_REGISTRY["env"], "CanterTestUnbounded-v0", lambda: _WideEnv(unbounded=True))


def test_spaces_mismatch_with_wide_space_is_one_line(capsys, runs, wide_envs):
    """The mismatch message embeds the spaces' repr; a large Box must not break it over several lines."""
    good, _ = runs
    code, out, err = run_cli(capsys, "eval", str(good), "--env", "CanterTestWide-v0", "--episodes", "1")
    assert_one_line_error(code, err, "do not match")


def test_dqn_wide_continuous_action_space_is_one_line(capsys, workdir, wide_envs):
    code, out, err = run_cli(capsys, "train", "dqn", "--env", "CanterTestWideBox-v0", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "Discrete action space")
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("algo", ["bc", "td3bc"])
def test_offline_algorithms_refusing_unbounded_actions_suggest_no_online_algorithm(algo):
    """BC and TD3+BC learn from a dataset: 'use ppo / a2c / trpo' does not fit them."""
    import gymnasium as gym
    import numpy as np

    from canter.errors import CanterError
    from canter.registry import lookup

    with pytest.raises(CanterError, match="is unbounded") as info:
        lookup("algorithm", algo).check_spaces(gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-np.inf, np.inf, (2,)))
    assert "ppo" not in str(info.value)


@pytest.mark.parametrize("algo", ["sac", "td3", "ddpg", "tqc"])
def test_squashing_algorithms_refuse_unbounded_actions(capsys, workdir, wide_envs, algo):
    """Their [-1, 1] actions are scaled into the bounds: infinite bounds gave NaN actions, silently."""
    code, out, err = run_cli(capsys, "train", algo, "--env", "CanterTestUnbounded-v0", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "is unbounded", "use ppo / a2c / trpo")
    assert list(workdir.iterdir()) == []
    from canter.envs import make_vec_env
    from canter.registry import lookup

    env = make_vec_env("CanterTestUnbounded-v0", 1)
    lookup("algorithm", "ppo").check_spaces(env.single_observation_space, env.single_action_space)  # Gaussian: fine
    env.close()


# ---------------------------------------------------------------------------------------------- real process


def run_subprocess(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run([sys.executable, "-m", "canter", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_subprocess_unknown_subcommand(tmp_path):
    proc = run_subprocess("trian", cwd=tmp_path)
    assert proc.returncode == 2
    assert_one_line_error(proc.returncode, proc.stderr, "'train'")
    assert proc.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_subprocess_bad_set_value(tmp_path):
    proc = run_subprocess("train", "ppo", "--env", "CartPole-v1", "--set", "lr=abc", "--run-dir", "run",
                          cwd=tmp_path)
    assert proc.returncode == 2
    assert_one_line_error(proc.returncode, proc.stderr, "lr", "abc")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------- output paths


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


@pytest.mark.parametrize("argv", [
    ["plot", "{good}", "--out", "{file}/curves.png"],
    ["report", "{good}", "--eval-episodes", "0", "--out", "{file}/report.html"],
    ["report", "{good}", "--eval-episodes", "0", "--out", "{dir}"],
    ["play", "{good}", "--video-dir", "{file}"],
], ids=["plot-out-under-file", "report-out-under-file", "report-out-is-dir", "play-video-dir-is-file"])
def test_unwritable_outputs_are_one_line(capsys, runs, tmp_path, argv):
    good, _ = runs
    (tmp_path / "notes.txt").write_text("precious\n")
    (tmp_path / "adir").mkdir()
    before = snapshot(good)
    argv = [a.format(good=good, file=tmp_path / "notes.txt", dir=tmp_path / "adir") for a in argv]
    code, out, err = run_cli(capsys, *argv)
    assert_one_line_error(code, err)
    assert (tmp_path / "notes.txt").read_text() == "precious\n"
    assert snapshot(good) == before


@pytest.mark.parametrize("argv, needle", [
    (["eval", "{good}", "--env", ""], "--env needs an env id"),
    (["play", "{good}", "--env", ""], "--env needs an env id"),
    (["play", "{good}", "--video-dir", ""], "--video-dir needs a directory path"),
])
def test_empty_option_values_are_refused(capsys, runs, argv, needle):
    """An empty --env was taken as no --env, but it dropped the run's env_kwargs; an empty --video-dir
    played without recording."""
    good, _ = runs
    code, _, err = run_cli(capsys, *[a.format(good=good) for a in argv], "--episodes", "1")
    assert_one_line_error(code, err, needle)


@pytest.mark.parametrize("cmd", ["eval", "play"])
def test_negative_seed_is_one_line(capsys, runs, cmd):
    good, _ = runs
    code, out, err = run_cli(capsys, cmd, str(good), "--seed", "-5", "--episodes", "1")
    assert_one_line_error(code, err, "--seed", "-5")


# ---------------------------------------------------------------------------------------------- flags


def test_abbreviated_flag_is_not_silently_taken_for_another(capsys, workdir):
    """'--n-step' is DQN's n-step return; for PPO it must not silently become --n-steps (argparse prefixes)."""
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *TINY, "--n-step", "5",
                             "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "--n-step", "'--n-steps'")
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("argv,needles", [
    (["train", "ppo", "--env", "CartPole-v1", "--max-stpes", "100"], ["--max-stpes", "'--max-steps'"]),
    (["train", "ppo", "--env", "CartPole-v1", "--lrr", "1e-3"], ["--lrr", "'--lr'"]),
    (["eval", "x", "--episode", "3"], ["--episode", "'--episodes'"]),
    (["train", "--resume", "x", "--max-step", "3"], ["--max-step", "'--max-steps'"]),
], ids=["train-typo", "train-hparam-typo", "eval-prefix", "resume-prefix"])
def test_unknown_flag_suggests_closest(capsys, workdir, argv, needles):
    code, out, err = run_cli(capsys, *argv)
    assert_one_line_error(code, err, *needles)
    assert list(workdir.iterdir()) == []


def test_record_every_without_video_extra_leaves_no_run_dir(capsys, workdir, monkeypatch):
    """A missing extra is reported before anything is written (no stray TensorBoard file)."""
    monkeypatch.setitem(sys.modules, "moviepy", None)  # import moviepy -> ImportError
    code, out, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *TINY, "--record-every", "128",
                             "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "canter[video]")
    assert list(workdir.iterdir()) == []


def test_resume_with_max_steps_below_current_step_says_why(capsys, runs, tmp_path):
    good, _ = runs
    run_dir = tmp_path / "run"
    shutil.copytree(good, run_dir)
    before = snapshot(run_dir)
    code, out, err = run_cli(capsys, "train", "--resume", str(run_dir), "--max-steps", "100")
    assert_one_line_error(code, err, "--max-steps", "256")
    assert snapshot(run_dir) == before


def test_resume_with_empty_path_is_one_line(capsys, workdir):
    code, out, err = run_cli(capsys, "train", "--resume=")
    assert_one_line_error(code, err, "--resume")
    assert "'.'" not in err


def test_eval_json_says_what_was_evaluated(capsys, runs):
    """--json names the checkpoint (best or last), its algorithm and step, and the evaluation seed."""
    good, _ = runs
    code, out, err = run_cli(capsys, "eval", str(good), "--json", "--episodes", "1", "--seed", "7")
    assert code == 0, err
    obj = json.loads(out)
    meta = json.loads((good / "checkpoints" / "best.json").read_text())
    assert obj["checkpoint"] == str(good / "checkpoints" / "best")
    assert obj["algorithm"] == "ppo" and obj["step"] == meta["step"] and obj["seed"] == 7
    assert obj["env"] == "CartPole-v1" and obj["episodes"] == 1


def test_no_command_is_one_line_on_stderr(capsys):
    code, out, err = run_cli(capsys)
    assert_one_line_error(code, err, "train", "--help")
    assert out == ""


def test_play_video_dir_with_earlier_videos_is_not_overwritten(capsys, runs, tmp_path):
    """play names its videos play-episode-N.mp4: a second play into the same --video-dir replaced the first
    one's files (with only Gymnasium's two-line warning)."""
    pytest.importorskip("moviepy")
    videos = tmp_path / "videos"
    videos.mkdir()
    (videos / "play-episode-0.mp4").write_bytes(b"an earlier play's video")
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, "play", str(runs[0]), "--video-dir", str(videos))
    assert_one_line_error(code, err, "play-episode-0.mp4", "--video-dir")
    assert snapshot(tmp_path) == before


def test_play_video_dir_with_other_files_records_quietly(capsys, runs, tmp_path, recwarn):
    pytest.importorskip("moviepy")
    videos = tmp_path / "videos"
    videos.mkdir()
    (videos / "notes.txt").write_bytes(b"kept")
    code, out, err = run_cli(capsys, "play", str(runs[0]), "--video-dir", str(videos), "--episodes", "2")
    assert code == 0, err
    assert err == ""
    # each episode's line names its own file (gymnasium numbers them from 0, the lines from 1)
    lines = out.splitlines()
    assert len(lines) == 2
    for i, line in enumerate(lines):
        assert line.startswith(f"episode {i + 1}: return ") and line.endswith(f" ({videos / f'play-episode-{i}.mp4'})")
    assert not [w for w in recwarn if "Overwriting existing videos" in str(w.message)]  # nothing of ours was there
    assert sorted(p.name for p in videos.iterdir()) == ["notes.txt", "play-episode-0.mp4", "play-episode-1.mp4"]
    assert (videos / "notes.txt").read_bytes() == b"kept"


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


@pytest.mark.parametrize("n_steps", ["100000000000", "1e30"])
def test_rollout_buffer_too_big_for_memory_is_one_line(capsys, workdir, n_steps):
    """torch's allocator failure was a RuntimeError traceback with C++ frames (the replay buffer's was one line)."""
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--n-envs", "2", "--max-steps", "256",
                           "--set", f"n_steps={n_steps}", "--quiet", "--run-dir", str(workdir / "run"))
    lines = [ln for ln in err.splitlines() if not ln.startswith("canter: warning:")]  # max_steps < one rollout
    assert_one_line_error(code, "\n".join(lines), "rollout buffer does not fit in memory", "hparams.n_steps")
    assert not (workdir / "run").exists() or not any((workdir / "run").iterdir())


@pytest.mark.parametrize("buffer_size", ["1000000000000", "1e30"])
def test_acer_segment_replay_too_big_for_memory_is_one_line(capsys, workdir, buffer_size):
    """ACER's segment replay: torch's allocator failure (or its size overflow) was a RuntimeError traceback."""
    code, _, err = run_cli(capsys, "train", "acer", "--env", "CartPole-v1", "--n-envs", "2", "--max-steps", "256",
                           "--set", f"buffer_size={buffer_size}", "--quiet", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "segment replay does not fit in memory", "hparams.buffer_size")
    assert not (workdir / "run").exists() or not any((workdir / "run").iterdir())
    code, _, err = run_cli(capsys, "train", "acer", "--env", "CartPole-v1", "--n-envs", "2", "--max-steps", "256",
                           "--set", "n_steps=1e30", "--quiet", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "segment replay does not fit in memory", "lower hparams.n_steps")


@pytest.mark.parametrize("algo", ["impala", "appo"])
@pytest.mark.parametrize("n_steps", ["100000000000", "1e30"])
def test_async_rollout_too_big_for_memory_is_one_line(capsys, workdir, algo, n_steps):
    """IMPALA/APPO explorer rollouts: NumPy's allocation error (or its dimension limit) was a traceback
    from the first iteration, after the run directory was written."""
    code, _, err = run_cli(capsys, "train", algo, "--env", "CartPole-v1", "--n-envs", "2", "--max-steps", "256",
                           "--set", f"n_steps={n_steps}", "--quiet", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "rollout of n_steps", "does not fit in memory", "hparams.n_steps")
    assert not (workdir / "run").exists() or not any((workdir / "run").iterdir())


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


def test_python_m_canter_cli_is_the_canter_command():
    """``python -m canter.cli train ...`` did nothing and exited 0 (the module had no main block)."""
    proc = subprocess.run([sys.executable, "-m", "canter.cli", "train", "nosuchalgo"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "unknown algorithm 'nosuchalgo'" in proc.stderr


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


def test_help_for_an_algorithm_that_cannot_be_found_says_why(capsys, tmp_path, monkeypatch):
    """``canter train ppo2 --help`` (a typo) or ``canter train my_mod:MyAlgo --help`` whose module fails to
    import printed the generic help without any hyperparameter and exited 0, not saying why."""
    code, _, err = run_cli(capsys, "train", "ppo2", "--help")
    assert_one_line_error(code, err, "unknown algorithm 'ppo2'", "did you mean 'ppo'")
    (tmp_path / "my_broken_algo.py").write_text("raise RuntimeError('broken at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = run_cli(capsys, "train", "my_broken_algo:Algo", "--help")
    assert_one_line_error(code, err, "cannot import module 'my_broken_algo'", "RuntimeError: broken at import")
    code, out, _ = run_cli(capsys, "train", "ppo", "--help")
    assert code == 0 and "--n-steps" in out


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


def test_train_flags_before_the_algorithm_keep_its_hyperparameter_flags(capsys, tmp_path):
    """``canter train --env CartPole-v1 ppo --lr 0.001`` (or ``--set imports=[my_pkg] NAME --my-knob 1``) took
    the first word not starting with '-' (the value of --env / --set) for the algorithm, so its hyperparameter
    flags were 'unrecognized arguments' (exit 2) and ``--help`` listed none; argparse reads the algorithm right."""
    import canter

    run = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "--env", "CartPole-v1", "--set", "n_steps=32", "ppo", "--lr", "0.002",
                           "--max-steps", "64", "--n-envs", "2", "--quiet", "--run-dir", str(run))
    assert code == 0, err
    assert canter.load(run).algorithm.config.lr == 0.002
    code, out, _ = run_cli(capsys, "train", "--env", "CartPole-v1", "ppo", "--help")
    assert code == 0 and "--n-steps" in out
    code, _, err = run_cli(capsys, "train", "--quiet", "ppo2", "--help")
    assert_one_line_error(code, err, "unknown algorithm 'ppo2'", "did you mean 'ppo'")


def test_train_hyperparameter_flags_before_the_algorithm(capsys, tmp_path):
    """``canter train --lr 0.001 ppo`` took 0.001 for the algorithm ('unrecognized arguments: --lr ppo'),
    and a misspelt algorithm with hyperparameter flags got 'unrecognized arguments' rather than its name."""
    import canter

    run = tmp_path / "run"
    code, _, err = run_cli(capsys, "train", "--lr", "0.002", "ppo", "--env", "CartPole-v1", "--n-steps", "32",
                           "--max-steps", "64", "--n-envs", "2", "--quiet", "--run-dir", str(run))
    assert code == 0, err
    assert canter.load(run).algorithm.config.lr == 0.002
    for argv in (["--lr", "0.002", "ppox"], ["ppox", "--lr", "0.002"]):
        code, _, err = run_cli(capsys, "train", *argv, "--env", "CartPole-v1", "--run-dir", str(tmp_path / "x"))
        assert_one_line_error(code, err, "unknown algorithm 'ppox'; did you mean 'ppo'")
    assert not (tmp_path / "x").exists()


def test_two_settings_after_one_set_flag_name_the_fix(capsys, tmp_path):
    """``--set a=1 b=2`` (as other tools' nargs flags take it) said only 'unrecognized arguments: b=2'."""
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", "n_steps=64", "batch_size=64",
                           "--run-dir", str(tmp_path / "x"))
    assert_one_line_error(code, err, "one KEY=VALUE per --set: --set batch_size=64")
    assert not (tmp_path / "x").exists()


def test_a_model_too_large_for_memory_is_one_line(capsys, workdir):
    """A size typed with a few zeros too many (net_arch=[1e14]) was torch's allocator RuntimeError traceback.
    1e14 units need more bytes than any address space holds, so the allocation fails on any machine."""
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", "net_arch=[100000000000000]",
                           "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "cannot build model ActorCritic for ppo: one of its tensors needs",
                          "check the sizes in its hyperparameters (net_arch=[100000000000000]")
    assert list(workdir.iterdir()) == []


def test_integer_flags_take_exponent_form_as_set_and_config_files_do(capsys, workdir):
    """--set max_steps=1e6 and 'max_steps: 1e6' in a file are 1,000,000, but --max-steps 1e6 was refused
    ('invalid int value'), as were --transitions 1e5 and --trials 1e2."""
    from canter.cli import _train_parser
    from canter.tools.collect import _collect_parser

    args = _train_parser("canter train", "ppo").parse_args(["ppo", "--max-steps", "1e6", "--eval-every", "2.5e4"])
    assert (args.max_steps, args.eval_every) == (1_000_000, 25_000)
    assert _collect_parser().parse_args(["--out", "x", "--transitions", "1e5"]).transitions == 100_000
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--max-steps", "1.5e0",
                           "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "argument --max-steps: invalid int value: '1.5e0'")
    assert not (workdir / "run").exists()


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


def test_the_algorithm_is_found_after_a_short_option_with_its_value_attached():
    """'canter train -fa.yaml ppo --lr 0.01': the algorithm finder took '-fa.yaml' for a flag whose value comes
    next, skipped 'ppo', and PPO's hyperparameter flags were 'unrecognized arguments: --lr 0.01'."""
    from canter.cli import _algo_arg

    assert _algo_arg(["-fa.yaml", "ppo", "--lr", "0.01"]) == "ppo"
    assert _algo_arg(["-f", "a.yaml", "ppo"]) == "ppo" and _algo_arg(["--env", "CartPole-v1", "dqn"]) == "dqn"
