"""A tiny cooperative PettingZoo parallel env for tests: ``pettingzoo:match_agents``.

Each of ``n_agents`` agents sees a one-hot target among 3 and earns 1 when its action matches it
(``team=True``: every agent earns 1 only when all match); an episode lasts 8 steps (truncation).
A shared policy that reads its observation earns 8 per agent. ``state()`` is every agent's target.
With ``miss_leaves=True`` an agent whose action misses its target leaves the episode
(terminated, reward 0), so random play earns about 0.5 per agent; the env refuses actions for
agents that have left, as PettingZoo envs may. With ``masked=True`` observations are PettingZoo's
``{"observation", "action_mask"}`` dicts whose mask allows the target and one other action, and
the env raises on a masked action; with ``factored=True`` too, the action is ``MultiDiscrete([3, 2])``
(the choice, then a second sub-action that earns nothing) and the mask sb3-contrib's 3 + 2 entries,
the second part allowing one of the two at random. With ``image_obs=True`` each agent observes an 8 x 8 RGB
uint8 image, its target's channel lit (255); with ``image_state=True`` ``state()`` is such images, one per agent,
side by side. With ``revive=True`` (and ``miss_leaves``) an agent that left is back
in ``agents`` at the next step, which PettingZoo's API forbids ("agent cannot be revived once dead").
With ``masked=True`` and ``info_mask=True`` the observations are the bare one-hot targets and each agent's mask is
in its ``infos[agent]["action_mask"]`` instead (PettingZoo's other place for it).
"""
from __future__ import annotations

import functools

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

LENGTH = 8


class MatchAgents(ParallelEnv):
    """Agents rewarded for matching their own one-hot target."""

    metadata = {"name": "match_agents_v0"}

    def __init__(self, n_agents: int = 2, miss_leaves: bool = False, team: bool = False, state: bool = True,
                 masked: bool = False, render_mode: str | None = None, revive: bool = False,
                 factored: bool = False, image_obs: bool = False, image_state: bool = False,
                 info_mask: bool = False) -> None:
        self.possible_agents = [f"agent_{i}" for i in range(n_agents)]
        self.render_mode = render_mode
        self.masked, self.factored, self.info_mask = masked, factored, info_mask
        self.miss_leaves = miss_leaves  # an agent that misses its target leaves the episode
        self.team = team  # every agent earns 1 only when all match (a reward no agent earns alone)
        self.revive = revive  # an agent that left is back in agents at the next step (not PettingZoo's API)
        self.image_obs, self.image_state = image_obs, image_state
        if state:  # PettingZoo's global state: every agent's target
            self.state_space = (spaces.Box(0, 255, (8, 8 * n_agents, 3), np.uint8) if image_state
                                else spaces.Box(0.0, 1.0, (3 * n_agents,), np.float32))
        self.rng = np.random.default_rng()

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str) -> spaces.Space:  # noqa: D102
        if self.image_obs:
            return spaces.Box(0, 255, (8, 8, 3), np.uint8)
        box = spaces.Box(0.0, 1.0, (3,), np.float32)
        mask = spaces.MultiBinary(5 if self.factored else 3)
        return spaces.Dict({"observation": box, "action_mask": mask}) if self.masked and not self.info_mask else box

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str) -> spaces.Space:  # noqa: D102
        return spaces.MultiDiscrete([3, 2]) if self.factored else spaces.Discrete(3)

    def _observe(self) -> dict:
        if self.image_obs:
            return {a: self._image(self.targets[a]) for a in self.agents}
        obs = {a: np.eye(3, dtype=np.float32)[self.targets[a]] for a in self.agents}
        if not self.masked:
            return obs
        self.masks = {}
        for a in self.agents:
            mask = np.zeros(3, np.int8)
            mask[[self.targets[a], (self.targets[a] + int(self.rng.integers(1, 3))) % 3]] = 1
            if self.factored:  # the second sub-action: one of its two choices allowed
                mask = np.r_[mask, np.eye(2, dtype=np.int8)[int(self.rng.integers(0, 2))]]
            self.masks[a] = mask
        if self.info_mask:
            return obs
        return {a: {"observation": obs[a], "action_mask": self.masks[a].copy()} for a in self.agents}

    def _infos(self) -> dict:
        if self.masked and self.info_mask:
            return {a: {"action_mask": self.masks[a].copy()} for a in self.agents}
        return {a: {} for a in self.agents}

    def _draw(self) -> None:
        self.targets = dict(zip(self.possible_agents, self.rng.integers(0, 3, len(self.possible_agents)).tolist()))

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:  # noqa: D102
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.agents = list(self.possible_agents)
        self.t = 0
        self._draw()
        return self._observe(), self._infos()

    @staticmethod
    def _image(target: int) -> np.ndarray:
        frame = np.zeros((8, 8, 3), np.uint8)
        frame[..., target] = 255
        return frame

    def state(self) -> np.ndarray:  # noqa: D102
        if self.image_state:
            return np.concatenate([self._image(self.targets[a]) * (a in self.agents) for a in self.possible_agents], 1)
        return np.stack([np.eye(3, dtype=np.float32)[self.targets[a]] * (a in self.agents)
                         for a in self.possible_agents]).reshape(-1)

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:  # noqa: D102
        if sorted(actions) != sorted(self.agents):
            raise ValueError(f"actions for {sorted(actions)}, but the agents are {sorted(self.agents)}")
        if self.factored:  # the second sub-action's choice j is mask entry 3 + j
            entries = {a: np.asarray(actions[a]).reshape(-1) + [0, 3] for a in self.agents}
            actions = {a: int(np.asarray(actions[a]).reshape(-1)[0]) for a in self.agents}
            if self.masked and any(not self.masks[a][entries[a]].all() for a in self.agents):
                raise ValueError(f"a masked action in {entries} (masks {self.masks})")
        elif self.masked and any(not self.masks[a][int(actions[a])] for a in self.agents):
            raise ValueError(f"a masked action in {actions} (masks {self.masks})")
        hits = {a: bool(actions[a] == self.targets[a]) for a in self.agents}
        rewards = {a: float(hit) for a, hit in hits.items()}
        if self.team:
            rewards = dict.fromkeys(rewards, float(all(hits.values())))
        self.t += 1
        self._draw()
        obs = self._observe()
        term = {a: self.miss_leaves and not hits[a] for a in self.agents}
        trunc = {a: self.t >= LENGTH and not term[a] for a in self.agents}
        infos = self._infos()
        self.agents = [a for a in self.agents if not (term[a] or trunc[a])]
        if self.revive and self.t < LENGTH:
            self.agents = list(self.possible_agents)
        return obs, rewards, term, trunc, infos


    def render(self) -> np.ndarray | None:
        """rgb_array: a 16 x 16k frame, agent i's target in its block's colour channel."""
        if self.render_mode != "rgb_array":
            return None
        frame = np.zeros((16, 16 * len(self.possible_agents), 3), np.uint8)
        for i, a in enumerate(self.possible_agents):
            if a in self.agents:
                frame[:, 16 * i:16 * (i + 1), self.targets[a]] = 255
        return frame


def parallel_env(**kwargs: object) -> MatchAgents:
    """PettingZoo's factory convention."""
    return MatchAgents(**kwargs)
