"""--vectorization native for an env whose native vectorised implementation autoresets in SAME_STEP mode: a one-line
error, not sync copies in its place without a word (``auto`` still picks the copies, in NEXT_STEP mode)."""
from __future__ import annotations

import gymnasium as gym
import pytest

import odd_api_env  # noqa: F401 (registers SameStepVec-v0)
from canter.envs import make_vec_env
from canter.errors import CanterError


def test_native_same_step_is_refused():
    with pytest.raises(CanterError, match=r"autoresets in SAME_STEP mode.*use --vectorization sync or async"):
        make_vec_env("odd_api_env:SameStepVec-v0", 4, "native")


def test_auto_takes_next_step_copies():
    env = make_vec_env("odd_api_env:SameStepVec-v0", 4, "auto")
    try:
        assert type(env.env) is gym.vector.SyncVectorEnv
        assert env.env.autoreset_mode == gym.vector.AutoresetMode.NEXT_STEP
    finally:
        env.close()


class _DictObs(gym.Env):
    """Dict observations (flattened per env copy by canter)."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Dict({"a": gym.spaces.Box(-1, 1, (2,)), "b": gym.spaces.Discrete(3)})
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple:  # noqa: D102
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: int) -> tuple:  # noqa: D102
        return self.observation_space.sample(), 0.0, False, False, {}


def _dict_obs_vector(num_envs: int = 1, **kwargs: object) -> gym.vector.VectorEnv:
    return gym.vector.SyncVectorEnv([_DictObs] * num_envs, autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP)


if "DictObsVec-v0" not in gym.registry:
    gym.register("DictObsVec-v0", entry_point=_DictObs, vector_entry_point=_dict_obs_vector, max_episode_steps=50)


def test_native_structured_observations_are_refused():
    """As a SAME_STEP one: native was asked, and make_vec_env put flattening sync copies in its place without a
    word (auto still does)."""
    with pytest.raises(CanterError, match=r"^env 'test_native_autoreset_mode:DictObsVec-v0': its native vectorised "
                                          r"implementation returns structured observations.*--vectorization sync"):
        make_vec_env("test_native_autoreset_mode:DictObsVec-v0", 4, "native")
    env = make_vec_env("test_native_autoreset_mode:DictObsVec-v0", 4, "auto")
    try:
        assert type(env.env) is gym.vector.SyncVectorEnv and env.single_observation_space.shape == (5,)
    finally:
        env.close()


class _ValueModeVector(gym.vector.SyncVectorEnv):
    """A native vector env whose metadata gives its autoreset mode as the value (``"NextStep"``), not the enum."""

    def __init__(self, num_envs: int = 1, max_episode_steps: int = 50, mode: str = "NextStep") -> None:
        from counter_envs import StepCount

        super().__init__([StepCount] * num_envs, autoreset_mode=gym.vector.AutoresetMode(mode))
        self.metadata = {**self.metadata, "autoreset_mode": mode}


if "ValueModeVec-v0" not in gym.registry:
    gym.register("ValueModeVec-v0", entry_point="counter_envs:StepCount", vector_entry_point=_ValueModeVector,
                 max_episode_steps=50)


@pytest.mark.filterwarnings("ignore:.*is not an instance of AutoresetMode")  # (gymnasium's warning of the value)
def test_a_native_env_giving_its_mode_as_the_value_is_taken_for_that_mode():
    """``"NextStep"`` was not NEXT_STEP: native was refused as 'autoresets in NextStep mode, and canter's trainers take
    NEXT_STEP', auto put sync copies in its place; ``"SameStep"`` is refused naming SAME_STEP."""
    for vectorization in ("native", "auto"):
        env = make_vec_env("test_native_autoreset_mode:ValueModeVec-v0", 4, vectorization)
        try:
            assert type(env.env) is _ValueModeVector
        finally:
            env.close()
    with pytest.raises(CanterError, match=r"autoresets in SAME_STEP mode, and canter's trainers take NEXT_STEP"):
        make_vec_env("test_native_autoreset_mode:ValueModeVec-v0", 4, "native", {"mode": "SameStep"})
