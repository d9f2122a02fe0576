"""The env_kwargs an ALE id takes: keys it does not take are one line naming what to do instead."""
import pytest

from canter import CanterError
from canter.cli import main
from canter.envs import make_vec_env

pytest.importorskip("ale_py")


@pytest.mark.parametrize("vectorization", ["auto", "native", "sync", "async"])
@pytest.mark.parametrize("key,value", [("grayscale_newaxis", True), ("scale_obs", True), ("maxpool", False)])
def test_a_fixed_part_of_the_preprocessing_says_so(vectorization, key, value):
    # gymnasium's TypeError was hinted from ale-py's native env's signature: noop_max got "did you mean
    # 'noop_max'?", frame_stack "'stack_num'"; --vectorization native said to use auto, which refused it too.
    # noop_max, frame_skip, screen_size, frame_stack and clip_reward are settings now (tests/test_atari_settings.py),
    # and so is grayscale (tests/test_atari_rgb.py)
    with pytest.raises(CanterError) as err:
        make_vec_env("ALE/Pong-v5", 2, vectorization, training=True, env_kwargs={key: value})
    message = str(err.value)
    assert f"'{key}' is not a setting: frames are always uint8" in message, message
    assert "grayscale: false for RGB" in message and "noop_max, frame_skip, screen_size" in message
    assert "did you mean" not in message and "use --vectorization" not in message and "\n" not in message


@pytest.mark.parametrize("vectorization", ["native", "sync"])
def test_a_misspelled_key_names_the_closest_key_taken(vectorization):
    with pytest.raises(CanterError, match=r"unknown env_kwargs key 'repeat_action_probabilty'; did you mean "
                                          r"'repeat_action_probability'\?"):
        make_vec_env("ALE/Pong-v5", 1, vectorization, env_kwargs={"repeat_action_probabilty": 0.25})


@pytest.mark.parametrize("kwargs,message", [
    ({"sound_obs": True}, r"sound_obs: True is not supported: sound observations"),  # was a TypeError traceback
    ({"continuous": True}, r"continuous: True is not supported: continuous actions"),  # was an AssertionError
    ({"game": "breakout"}, r"game: 'breakout' is not supported: the game is the env id's"),  # played Breakout
])
def test_ale_py_arguments_the_preprocessing_cannot_take_are_one_line_errors(kwargs, message):
    with pytest.raises(CanterError, match=message):
        make_vec_env("ALE/Pong-v5", 1, "sync", env_kwargs=kwargs)


def test_their_off_values_are_taken():
    env = make_vec_env("ALE/Pong-v5", 1, "sync", env_kwargs={"sound_obs": False, "continuous": False})
    assert env.single_observation_space.shape == (4, 84, 84)
    env.close()


def test_the_cli_refuses_sound_obs_in_one_line(tmp_path, capsys):
    code = main(["train", "ppo", "--env", "ALE/Pong-v5", "--env-kwargs", "{sound_obs: true}", "--max-steps", "8",
                 "--run-dir", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "sound_obs: True is not supported" in err, err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("key,taken", [("episodic_life", "terminal_on_life_loss"), ("stack_num", "frame_stack"),
                                       ("img_height", "screen_size"), ("reward_clipping", "clip_reward"),
                                       ("grayscale_obs", "grayscale"), ("gray_scale", "grayscale")])
def test_other_wrappers_names_of_settings_taken_name_canter_s_key(key, taken):
    with pytest.raises(CanterError, match=f"env_kwargs '{key}' is {taken} here"):
        make_vec_env("ALE/Pong-v5", 1, "sync", env_kwargs={key: 0.25})


def _sticky(env):
    from canter.envs.atari_sticky import StickyActions

    while not isinstance(env, StickyActions):
        env = env.env
    return env


@pytest.mark.parametrize("vectorization", ["native", "sync"])
def test_sb3_s_action_repeat_probability_is_taken_for_sticky_actions(vectorization):
    # SB3's AtariWrapper(action_repeat_probability=...) was told to use repeat_action_probability; it is the same
    # setting (sticky actions), so it is taken under SB3's name too, as n_stack is for frame_stack
    from canter.envs.atari import _base_kwargs, make_atari_vec

    assert _base_kwargs("ALE/Pong-v5", {"action_repeat_probability": 0.25})["repeat_action_probability"] == 0.25
    env = make_atari_vec("ALE/Pong-v5", 1, vectorization, env_kwargs={"action_repeat_probability": 0.25})
    native = type(env.unwrapped).__name__ == "AtariVectorEnv"
    sticky = None if native else _sticky(env.envs[0]).probability  # drawn in Python on the wrapper path
    env.close()
    assert native == (vectorization == "native") and sticky in (None, 0.25)


@pytest.mark.parametrize("kwargs", [{"obs_type": "grayscale"}, {"obs_type": "rgb"}, {"sound_obs": False}])
def test_keys_the_preprocessing_makes_no_ops_keep_the_native_env(kwargs):
    # the frames are the preprocessed screen whatever obs_type says: auto took such a key to the wrapper path (async
    # subprocesses for 2 envs), and --vectorization native refused it
    from ale_py.vector_env import AtariVectorEnv

    for vectorization in ("auto", "native"):
        env = make_vec_env("ALE/Pong-v5", 2, vectorization, env_kwargs=kwargs)
        native, shape = isinstance(env.env.unwrapped, AtariVectorEnv), env.single_observation_space.shape
        env.close()
        assert native and shape == (4, 84, 84), vectorization
