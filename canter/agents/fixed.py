"""A policy of a multi-policy run that acts uniformly at random (``policy_hparams: {<policy>: {algo: random}}``).

:class:`RandomPolicy` stands where an :class:`~canter.agents.Agent` stands in a
:class:`~canter.agents.multi.MultiPolicyAgent`: it acts (uniform over the action space, over the allowed actions
where the observations carry an action mask), and has no networks, optimizers, statistics or saved state. Its draws
come from two torch generators of its own (training, and evaluation or ``predict``), seeded from the run's seed,
whose states the run saves with its trainer state so that a resumed run continues exactly.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from canter.agents.observation_input import ObservationInput
from canter.envs.random_actions import random_env_actions

#: the ``policy_hparams.<policy>.algo`` that makes a policy act uniformly at random
RANDOM = "random"


class _NoAlgorithm:
    """What the trainer machinery reads of a policy's algorithm, for a policy that has none."""

    config = None
    family = "fixed"
    numpy_products = False
    updates = 0

    def modules(self) -> dict[str, torch.nn.Module]:
        """No networks."""
        return {}

    def optimizers(self) -> dict[str, Any]:
        """No optimizers."""
        return {}

    def hidden_width(self) -> int:
        """No hidden layers (the thread count follows the other policies')."""
        return 1


class RandomPolicy(ObservationInput):
    """Uniform random actions for one policy's agents (module docstring). Observations are taken as an
    :class:`~canter.agents.Agent` takes them (:class:`ObservationInput`, whose checks it inherits: its methods copied
    one by one missed ``_check_binary`` when d2ff7c97 added it, an AttributeError at every draw)."""

    obs_rms = None
    torch_threads = 1
    acting_threads = None

    def __init__(self, observation_space: gym.Space, action_space: gym.Space, seed: int,
                 central: bool = False) -> None:
        self.observation_space, self.action_space = observation_space, action_space
        #: ``central`` (a run with ``central_state``, MAPPO): each observation is ``[2, w]``, the agent's own row first
        #: (its action mask in its last columns), then the critic's input, which a random policy never reads
        self._own_space = _own_row_space(observation_space) if central else observation_space
        self.algorithm = _NoAlgorithm()
        self.metadata: dict[str, Any] | None = None
        #: the draws of training (``explore``) and of evaluations and ``predict``
        self.generators = {"train": torch.Generator().manual_seed(seed), "eval": torch.Generator().manual_seed(seed + 1)}

    @classmethod
    def check_spaces(cls, observation_space: gym.Space, action_space: gym.Space) -> None:
        """Any spaces: random actions are drawn for every action space canter trains on."""

    def _draw(self, obs: np.ndarray, generator: torch.Generator) -> np.ndarray:
        batch, single = self.as_batch(obs)
        rng = np.random.default_rng(int(torch.randint(2**62, (1,), generator=generator)))
        own = batch if self._own_space is self.observation_space else batch[:, 0]  # central_state: the agent's row
        actions = random_env_actions(self.action_space, len(batch), rng, own, self._own_space)
        return actions[0] if single else actions

    def predict(self, obs: Any, *, deterministic: bool = True) -> np.ndarray | np.generic:
        """Uniform random actions (``deterministic`` changes nothing: the policy is random)."""
        return self._draw(obs, self.generators["eval"])

    def explore(self, obs: Any, generator: torch.Generator | None = None) -> np.ndarray | np.generic:
        """Uniform random actions for training, drawn from ``generator`` where given (as
        :meth:`Agent.explore <canter.agents.Agent.explore>`: a sampled evaluation's own, seeded one)."""
        return self._draw(obs, self.generators["train"] if generator is None else generator)

    def seed_evaluation(self, seed: int) -> None:
        """Restart :meth:`predict`'s draws from ``seed``: an evaluation with a seed (``canter.evaluate``, the run's
        evaluations) plays the same random actions each time, as it plays the same env episodes."""
        self.generators["eval"].manual_seed(int(seed))

    def reset_returns(self) -> None:
        """Nothing to reset (no reward statistics)."""

    def scale_reward(self, reward: np.ndarray, *args: Any) -> np.ndarray:
        """Rewards as they are."""
        return reward

    def state_dict(self) -> dict[str, Any]:
        """Nothing: a random policy has no weights (its generators are trainer state: :meth:`rng_state`)."""
        return {}

    def load_state_dict(self, state: dict[str, Any], weights_only: bool = False) -> None:
        """Nothing to restore."""

    def save(self, path: Any) -> Any:
        """Refused in one line: a random policy has no weights to save (nor a run of its own to load)."""
        from canter.errors import CanterError

        raise CanterError("a random policy (algo: random) has no weights to save; save the multi-policy agent, "
                          "or a policy that learns")

    def rng_state(self) -> dict[str, torch.Tensor]:
        """The generators' states."""
        return {k: g.get_state() for k, g in self.generators.items()}

    def load_rng_state(self, state: dict[str, torch.Tensor]) -> None:
        """Restore :meth:`rng_state`."""
        for k, g in self.generators.items():
            g.set_state(torch.as_tensor(state[k], dtype=torch.uint8))


def _own_row_space(space: gym.Space) -> gym.Space:
    """The space of the first row (the agent's own observation and action mask) of a ``central_state`` observation
    space ``[2, w]`` (a :class:`~canter.envs.masks.MaskedBox` keeps its mask's width)."""
    from canter.envs.masks import MaskedBox, mask_width

    width = mask_width(space)
    if width:
        return MaskedBox(space.low[0], space.high[0], width)
    return gym.spaces.Box(space.low[0], space.high[0], dtype=space.dtype)
