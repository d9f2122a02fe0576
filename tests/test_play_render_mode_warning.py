"""``canter play`` with a render_mode the env does not list: canter's one-line error alone. Gymnasium's two-line
warning ("The environment is being initialised with render_mode='ansi' that is not in the possible render_modes")
came first, from the env made to check the spaces and from the env made to render."""
from __future__ import annotations

import warnings

import pytest

import canter
from support import assert_one_line_error, run_cli

UNLISTED = "not in the possible render_modes"


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("run") / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=64, n_envs=1, n_steps=64, batch_size=32,
                 eval_episodes=0, tensorboard=False)
    return str(run_dir)


def _gymnasiums(caught) -> list[str]:
    return [str(w.message) for w in caught if UNLISTED in str(w.message)]


def test_play_with_an_unlisted_render_mode_is_canters_error_alone(cartpole_run, capsys):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, _, err = run_cli(capsys, "play", cartpole_run, "--env-kwargs", "{render_mode: ansi}")
    assert_one_line_error(code, err, "bad env_kwargs for 'CartPole-v1': render_mode='ansi' cannot render")
    assert _gymnasiums(caught) == []


def test_eval_which_does_not_render_still_gets_gymnasiums_warning(cartpole_run, capsys):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = run_cli(capsys, "eval", cartpole_run, "--episodes", "1", "--env-kwargs", "{render_mode: ansi}")
    assert code == 0, err
    assert len(_gymnasiums(caught)) >= 1  # the evaluation env's own (the probe's is held back)


def test_the_held_warnings_are_given_where_the_env_renders(cartpole_run):
    from canter.play import unlisted_render_mode_held

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with unlisted_render_mode_held():
            warnings.warn("WARN: The environment is being initialised with render_mode='x' that is " + UNLISTED)
            warnings.warn("another")
    assert [str(w.message) for w in caught] == [
        "WARN: The environment is being initialised with render_mode='x' that is " + UNLISTED, "another"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(canter.CanterError), unlisted_render_mode_held():
            warnings.warn("render_mode='x' " + UNLISTED)
            warnings.warn("another")
            raise canter.CanterError("cannot render")
    assert [str(w.message) for w in caught] == ["another"]


@canter.register("env", "WarnsWhenMade-test")
def warns_when_made():
    """CartPole whose constructor warns (every time: Python shows it once per place, by default)."""
    import gymnasium as gym

    warnings.warn("WarnsWhenMade: made", UserWarning)
    return gym.make("CartPole-v1")


def test_a_warning_of_the_env_made_to_check_the_spaces_and_again_to_evaluate_is_shown_once(cartpole_run, capsys):
    """The warnings held back while the spaces are checked were given again as new ones (Python's once-per-place
    record lost, a catch_warnings reset it), so the evaluation env's same warning was shown a second time."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        code, _, err = run_cli(capsys, "eval", cartpole_run, "--env", "WarnsWhenMade-test", "--episodes", "1")
    assert code == 0, err
    assert [str(w.message) for w in caught if "WarnsWhenMade" in str(w.message)] == ["WarnsWhenMade: made"]


def test_eval_shows_gymnasiums_warning_once_where_python_shows_each_once(cartpole_run, capsys):
    """Python's default filter: the probe's dropped warning is not recorded as shown, so the evaluation env's is."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        code, _, err = run_cli(capsys, "eval", cartpole_run, "--episodes", "1", "--env-kwargs", "{render_mode: ansi}")
    assert code == 0, err
    assert len(_gymnasiums(caught)) == 1
