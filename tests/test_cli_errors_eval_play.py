"""``canter eval``, ``play``, ``plot``, ``report`` and ``train --resume`` given a bad run, checkpoint, env or
option: one ``canter: error:`` line (exit 2) and the run untouched; and spaces that do not fit. The
module-scoped ``runs`` fixture trains two tiny PPO runs once for every test that uses it."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from canter.cli import main
from support import TINY_ARGV as TINY
from support import assert_one_line_error, run_cli, snapshot


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


def test_the_runs_own_env_id_given_to_eval_play_and_collect_keeps_its_env_kwargs(capsys, tmp_path):
    """``--env`` naming the run's own env dropped the env_kwargs it was trained with (CartPole cut at 7 steps
    played to CartPole's 500); another id starts from none, and --env-kwargs are merged over the run's."""
    from canter.data.dataset import read_dataset_metadata

    run = tmp_path / "run"
    train_tiny(capsys, run, "--env-kwargs", "{max_episode_steps: 7}")
    code, out, err = run_cli(capsys, "eval", str(run), "--env", "CartPole-v1", "--episodes", "2", "--json")
    assert code == 0 and json.loads(out)["lengths"] == [7, 7], err
    code, out, err = run_cli(capsys, "play", str(run), "--env", "CartPole-v1", "--episodes", "1")
    assert (code, out) == (0, "episode 1: return 7.00\n"), err
    code, out, err = run_cli(capsys, "eval", str(run), "--env", "CartPole-v1", "--env-kwargs", "{max_episode_steps: 5}",
                             "--episodes", "2", "--json")
    assert code == 0 and json.loads(out)["lengths"] == [5, 5], err
    for env, kwargs in (("CartPole-v1", {"max_episode_steps": 7}), ("CartPole-v0", {})):
        data = tmp_path / env
        code, out, err = run_cli(capsys, "collect", str(run), "--env", env, "--transitions", "20", "--out", str(data))
        assert code == 0 and read_dataset_metadata(data)["env_kwargs"] == kwargs, err


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


def test_resume_with_max_steps_below_current_step_says_why(capsys, runs, tmp_path):
    good, _ = runs
    run_dir = tmp_path / "run"
    shutil.copytree(good, run_dir)
    before = snapshot(run_dir)
    code, out, err = run_cli(capsys, "train", "--resume", str(run_dir), "--max-steps", "100")
    assert_one_line_error(code, err, "--max-steps", "256")
    assert snapshot(run_dir) == before


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


def test_eval_json_names_the_checkpoint_it_evaluated_when_a_best_appears_meanwhile(capsys, runs, tmp_path,
                                                                                    monkeypatch):
    """A run still training that has only its ``last`` (no evaluation yet) was evaluated from ``last``, and --json
    looked the checkpoint up again afterwards: a ``best`` saved meanwhile (the run's first evaluation) was named,
    beside ``last``'s step. It names the checkpoint that was loaded."""
    import canter.trainers.evaluation as evaluation
    from canter.checkpoint import load_checkpoint, save_checkpoint

    run = tmp_path / "run"
    shutil.copytree(runs[0], run)
    for f in (run / "checkpoints").glob("best.*"):
        f.unlink()
    real = evaluation.evaluate_agent

    def evaluate_while_the_run_saves_a_best(*args, **kwargs):
        state, meta = load_checkpoint(run / "checkpoints" / "last")
        save_checkpoint(run / "checkpoints" / "best", state, {k: v for k, v in meta.items() if k not in
                                                              ("sha256", "checkpoint_id", "state")} | {"step": 1})
        return real(*args, **kwargs)

    monkeypatch.setattr(evaluation, "evaluate_agent", evaluate_while_the_run_saves_a_best)
    code, out, err = run_cli(capsys, "eval", str(run), "--json", "--episodes", "1")
    assert code == 0, err
    obj = json.loads(out)
    assert (obj["checkpoint"], obj["step"]) == (str(run / "checkpoints" / "last"), 256)


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


@pytest.mark.parametrize("argv", [["report", "{run}", "--eval-episodes", "0"], ["plot", "{run}", "--out", "{tmp}/p.png"],
                                  ["eval", "{run}"], ["play", "{run}", "--episodes", "1"],
                                  ["train", "--resume", "{run}", "--max-steps", "512"],
                                  ["collect", "{run}", "--out", "{tmp}/d", "--transitions", "8"]],
                         ids=["report", "plot", "eval", "play", "resume", "collect"])
def test_a_run_dir_renamed_to_bytes_that_are_not_utf8(capsys, runs, tmp_path, argv):
    """A run directory renamed to a name that is not UTF-8 (b'run\\xff'): report and plot printed a
    UnicodeEncodeError traceback (pyarrow); eval, play, resume and collect said its checkpoint was 'not a readable
    safetensors file'. Each says in one line that the path is not UTF-8 (shown with \\xff), and writes nothing."""
    run = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/run\xff"))
    shutil.copytree(runs[0], run)
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, *(a.format(run=run, tmp=tmp_path) for a in argv))
    assert_one_line_error(code, err, "run\\xff", "is not valid UTF-8")
    assert snapshot(tmp_path) == before


def test_collect_refuses_an_out_path_that_is_not_utf8(capsys, runs, tmp_path):
    """collect --out b'data\\xff' wrote the dataset's two files, then failed reading them back (safetensors):
    refused in one line before anything is written."""
    out = os.fsdecode(os.fsencode(str(tmp_path)) + b"/data\xff")
    code, _, err = run_cli(capsys, "collect", str(runs[0]), "--out", out, "--transitions", "8")
    assert_one_line_error(code, err, "--out", "data\\xff", "is not valid UTF-8")
    assert list(tmp_path.iterdir()) == []


def _no_render_mode_env() -> object:
    from support import FixedLengthEnv

    return FixedLengthEnv  # 5 steps, then truncated


def test_play_an_env_whose_constructor_takes_no_render_mode(capsys, tmp_path):
    import gymnasium as gym

    gym.register("CanterTestNoRenderMode-v0", entry_point=_no_render_mode_env())
    try:
        run_dir = tmp_path / "run"
        code, _, err = run_cli(capsys, "train", "ppo", "--env", "CanterTestNoRenderMode-v0", *TINY, "--run-dir",
                               str(run_dir))
        assert code == 0, err
        code, out, err = run_cli(capsys, "play", str(run_dir), "--episodes", "2")  # was gymnasium's TypeError traceback
        assert code == 0, err
        assert out.splitlines() == ["episode 1: return 5.00", "episode 2: return 5.00"]
        code, out, err = run_cli(capsys, "play", str(run_dir), "--render")
        assert_one_line_error(code, err, "CanterTestNoRenderMode-v0", "cannot render", "takes no render_mode")
    finally:
        gym.registry.pop("CanterTestNoRenderMode-v0", None)


def test_an_env_without_a_render_method_is_one_line_for_video_and_render(capsys, tmp_path, monkeypatch):
    """A custom env that never overrode render() (Stable-Baselines3's custom-env tutorial has one that prints):
    play --video-dir, play --render and train --record-every ended in gymnasium.Env.render's bare
    NotImplementedError traceback."""
    pytest.importorskip("moviepy")
    from canter.errors import CanterError
    from canter.play import play

    (tmp_path / "norender_envs.py").write_text(
        "import gymnasium as gym\nimport numpy as np\n\n\nclass NoRender(gym.Env):\n"
        "    metadata = {'render_modes': ['human', 'rgb_array']}\n"
        "    observation_space = gym.spaces.Box(-1, 1, (2,), np.float32)\n    action_space = gym.spaces.Discrete(2)\n\n"
        "    def __init__(self, render_mode=None):\n        self.render_mode = render_mode\n\n"
        "    def reset(self, seed=None, options=None):\n        return np.zeros(2, np.float32), {}\n\n"
        "    def step(self, action):\n        return np.zeros(2, np.float32), 1.0, True, False, {}\n\n\n"
        "gym.register('TestsNoRender-v0', entry_point=NoRender, max_episode_steps=10, disable_env_checker=True)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    env = "norender_envs:TestsNoRender-v0"
    code, _, err = run_cli(capsys, "train", "ppo", "--env", env, *TINY, "--record-every", "64", "--run-dir",
                           str(tmp_path / "rec"))
    assert_one_line_error(code, err, f"'{env}' cannot render: its render() raised NotImplementedError, as an env "
                                     f"without a render method does; recording video needs an env that renders in "
                                     f"render_mode 'rgb_array'")
    assert not (tmp_path / "rec").exists()
    with pytest.raises(CanterError, match=r"cannot render: .*; --render needs an env that renders in render_mode 'human'"):
        play(None, env, render=True)
    with pytest.raises(CanterError, match="recording video needs"):
        play(None, env, video_dir=str(tmp_path / "videos"))
    assert not (tmp_path / "videos").exists()
