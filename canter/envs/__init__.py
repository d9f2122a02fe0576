"""Environment creation, vectorisation and space helpers."""
from canter.envs.make import check_env_id, make_env, make_vec_env
from canter.envs.spaces import (
    bounds_difference, describe_space, space_from_dict, space_to_dict, spaces_match, spaces_mismatch,
)
from canter.envs.vector import Step, VecEnv
from canter.envs import goals, pomdp  # noqa: F401,E402  (register BitFlipping-v0, CartPoleNoVel-v1)

__all__ = [
    "bounds_difference", "check_env_id", "describe_space", "make_env", "make_vec_env", "space_from_dict", "space_to_dict", "spaces_match",
    "spaces_mismatch",
    "Step", "VecEnv",
]
