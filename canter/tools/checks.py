"""Checks the tools run before starting any training, so bad input fails early and writes nothing."""
from __future__ import annotations

from typing import Any

from canter.errors import CanterError


def check_algo_env(algo: str, env: str, env_kwargs: dict[str, Any] | None = None, policies: str = "shared",
                   central_state: bool = False) -> None:
    """Raise a CanterError unless ``env`` can be made and ``algo`` can act in its action space
    (each policy's, with several policies)."""
    from canter.api import check_spaces
    from canter.envs import make_vec_env
    from canter.registry import lookup

    probe = make_vec_env(env, 1, "sync", env_kwargs, policies=policies, central_state=central_state)
    try:
        check_spaces(lookup("algorithm", algo), probe.single_observation_space, probe.single_action_space)
    except CanterError as exc:
        raise CanterError(f"{algo} on {env}: {exc}") from None
    finally:
        probe.close()
