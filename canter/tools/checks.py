"""Checks the tools run before starting any training, so bad input fails early and writes nothing."""
from __future__ import annotations

from numbers import Integral, Real
from typing import Any

from canter.errors import CanterError


def check_algo_env(algo: str, env: str, env_kwargs: dict[str, Any] | None = None, policies: str = "shared",
                   central_state: bool = False, run: Any = None) -> None:
    """Raise a CanterError unless ``env`` can be made and ``algo`` can act in its action space
    (each policy's, with several policies: with the ``run`` config, a policy of its own algorithm in its own)."""
    from canter.build_checks import check_spaces
    from canter.envs import make_vec_env
    from canter.registry import lookup

    probe = make_vec_env(env, 1, "sync", env_kwargs, policies=policies, central_state=central_state)
    try:
        check_spaces(lookup("algorithm", algo), probe.single_observation_space, probe.single_action_space, run)
    except CanterError as exc:
        raise CanterError(f"{algo} on {env}: {exc}") from None
    finally:
        probe.close()


def check_collect_settings(transitions: Any, epsilon: Any, seed: Any) -> None:
    """A one-line CanterError unless ``transitions`` is a whole number >= 1, ``epsilon`` a number from 0 to 1 and
    ``seed`` a whole number from 0 to 2**32 - 1 (the flags of ``canter collect``, the arguments of
    :func:`canter.data.dataset.collect`)."""
    def whole(v: Any) -> bool:
        return isinstance(v, Integral) and not isinstance(v, bool)

    if not whole(transitions) or transitions < 1:
        raise CanterError(f"--transitions must be a whole number >= 1, got {transitions!r}")
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real) or not 0.0 <= epsilon <= 1.0:
        raise CanterError(f"--epsilon must be between 0 and 1, got {epsilon!r}")
    if not whole(seed) or not 0 <= seed < 2**32:
        raise CanterError(f"--seed must be a whole number between 0 and 2**32 - 1, got {seed!r}")


def dataset_mismatch(run: Any) -> tuple[str, Any] | None:
    """How an offline run's dataset differs from the run's env, as the offline trainer would refuse it when the run
    starts, read from the dataset's metadata (its tensors are not read): ``("env", the dataset's env id)``,
    ``("env_kwargs", the dataset's env_kwargs)``, or None where it fits (or ``run`` takes no dataset)."""
    from canter.data.dataset import read_dataset_metadata
    from canter.envs.make import same_env_id

    if run.dataset is None:
        return None
    meta = read_dataset_metadata(run.dataset)
    data_env, data_kwargs = meta.get("env"), dict(meta.get("env_kwargs") or {})
    if isinstance(data_env, str) and not same_env_id(data_env, run.env):
        return "env", data_env
    if run.env_kwargs and run.env_kwargs != data_kwargs:
        return "env_kwargs", data_kwargs
    return None
