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
