"""Several policies acting together in one multi-agent env (run config ``policies: type | agent``).

A :class:`MultiPolicyAgent` holds one :class:`~canter.agents.Agent` per policy, each with its own
Model -> Algorithm chain, and acts on dicts ``policy -> observations of its agents``. Its
``algorithm`` is a :class:`PolicyGroup`, which shows the policies' algorithms to the shared
trainer machinery (learning-rate control, the divergence guard, thread settings) as one: every
module and optimizer under a ``policy.`` prefix.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from canter.agents.agent import Agent
from canter.errors import CanterError, keywords_checked


class PolicyGroup:
    """The algorithms of a multi-policy agent, seen as one by trainers, loggers and the guard."""

    def __init__(self, algorithms: dict[str, Any]) -> None:
        self.algorithms = algorithms
        # a learning policy's (a random policy has no config)
        first = next((a for a in algorithms.values() if a.config is not None), next(iter(algorithms.values())))
        #: the first policy's hyperparameters (``policy_hparams`` may change some per policy, or a policy's
        #: algorithm, which each policy's own trainer reads)
        self.config = first.config
        self.family = first.family
        self.numpy_products = any(a.numpy_products for a in algorithms.values())

    @property
    def updates(self) -> int:
        """Gradient updates of every policy together."""
        return sum(a.updates for a in self.algorithms.values())

    def modules(self) -> dict[str, torch.nn.Module]:
        """Every policy's modules, ``policy.name``."""
        return {f"{p}.{k}": m for p, a in self.algorithms.items() for k, m in a.modules().items()}

    def optimizers(self) -> dict[str, Any]:
        """Every policy's optimizers, ``policy.name``."""
        return {f"{p}.{k}": o for p, a in self.algorithms.items() for k, o in a.optimizers().items()}

    def hidden_width(self) -> int:
        """The widest hidden layer of any policy (it decides the thread count)."""
        return max(a.hidden_width() for a in self.algorithms.values())


class MultiPolicyAgent:
    """One :class:`~canter.agents.Agent` per policy; observations and actions are dicts keyed by policy."""

    def __init__(self, agents: dict[str, Agent]) -> None:
        self.agents = agents
        for name, member in agents.items():  # named by errors about acting with one policy alone
            member.policy_name = name
        self.algorithm = PolicyGroup({p: a.algorithm for p, a in agents.items()})
        self.observation_space = gym.spaces.Dict({p: a.observation_space for p, a in agents.items()})
        self.action_space = gym.spaces.Dict({p: a.action_space for p, a in agents.items()})
        self.torch_threads = max(getattr(a, "torch_threads", 1) or 1 for a in agents.values())
        self._metadata: dict[str, Any] | None = None

    @property
    def metadata(self) -> dict[str, Any] | None:
        """The run's checkpoint metadata, which ``canter.train`` and ``canter.load`` set (None before)."""
        return self._metadata

    @metadata.setter
    def metadata(self, meta: dict[str, Any] | None) -> None:
        # each policy's agent gets a single-policy run's metadata, so that ``agents[p].save(path)`` writes a
        # checkpoint that ``canter.load`` reads back as a single agent (it had none: save was refused)
        self._metadata = meta
        for policy, agent in self.agents.items():
            agent.metadata = policy_metadata(meta, agent, policy)

    @property
    def acting_threads(self) -> int | None:
        """Torch's thread count for acting (:attr:`Agent.acting_threads <canter.agents.Agent.acting_threads>`): the
        largest of the policies' (each policy's predict switches to its own where they differ)."""
        counts = [a.acting_threads for a in self.agents.values() if getattr(a, "acting_threads", None)]
        return max(counts) if counts else None

    @property
    def policies(self) -> list[str]:
        """Policy names, in the env's order."""
        return list(self.agents)

    @keywords_checked("agent.predict", positional="deterministic is a keyword: predict(obs, deterministic=False)")
    def predict(self, obs: dict[str, Any], *, deterministic: bool = True) -> dict[str, np.ndarray | np.generic]:
        """Deterministic (or, ``deterministic=False``, sampled) actions for ``{policy: its agents'
        observations}`` (some or all policies)."""
        unknown = sorted(set(obs) - set(self.agents)) if isinstance(obs, dict) else None
        if unknown is None or unknown:
            got = f"a {type(obs).__name__}" if unknown is None else f"policies {unknown}"
            raise CanterError(f"predict takes a dict of observations keyed by policy ({', '.join(self.agents)}), "
                              f"got {got}")
        actions = {}
        for p, o in obs.items():
            try:
                actions[p] = self.agents[p].predict(o, deterministic=deterministic)
            except CanterError as exc:  # which policy's observations they were: several may share a shape
                raise CanterError(f"policy '{p}': {exc}") from None
        return actions

    def reset_returns(self) -> None:
        """Every policy's :meth:`~canter.agents.Agent.reset_returns`."""
        for agent in self.agents.values():
            agent.reset_returns()

    save = Agent.save

    def state_dict(self) -> dict[str, Any]:
        """Every policy's agent state."""
        return {"policies": {p: agent.state_dict() for p, agent in self.agents.items()}}

    def load_state_dict(self, state: dict[str, Any], weights_only: bool = False) -> None:
        """Restore :meth:`state_dict`."""
        saved = state["policies"]
        if sorted(saved) != sorted(self.agents):
            raise KeyError(f"the checkpoint holds policies {sorted(saved)}, the env gives {sorted(self.agents)}")
        for p, agent in self.agents.items():
            agent.load_state_dict(saved[p], weights_only=weights_only)


def policy_metadata(meta: dict[str, Any] | None, agent: Agent, policy: str) -> dict[str, Any] | None:
    """The checkpoint metadata of ``policy``'s ``agent`` of a multi-policy run whose metadata is ``meta``: the run's,
    as a run of that one policy (``policies: shared``, its own algorithm, hyperparameters and spaces), so that
    :func:`canter.load` builds a single :class:`~canter.agents.Agent` from it."""
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict) or agent.algorithm.config is None:
        return None  # a random policy (no config) has nothing to save
    from canter.config import to_dict
    from canter.envs.spaces import space_to_dict

    config = {**meta["config"], "policies": "shared", "policy_hparams": {}, "hparams": to_dict(agent.algorithm.config)}
    own = (meta["config"].get("policy_hparams") or {}).get(policy)
    if isinstance(own, dict) and own.get("algo", config.get("algo")) != config.get("algo"):  # its own algorithm
        config.update(algo=own["algo"], model=None, agent=None)
    return {**meta, "config": config, "observation_space": space_to_dict(agent.observation_space),
            "action_space": space_to_dict(agent.action_space)}
