"""PettingZoo parallel envs as one vector env: every agent of every copy is a sub-env (shared policy).

``--env pettingzoo:MODULE`` names a module with PettingZoo's ``parallel_env(**kwargs)`` factory
(``pettingzoo:pettingzoo.butterfly.pistonball_v6``, ``pettingzoo:mpe2.simple_spread_v3``, or a
module of your own). With ``n_envs`` copies of an env of ``k`` agents the algorithm sees
``n_envs * k`` sub-envs, copy-major, so one policy acts for every agent (parameter sharing, as
SuperSuit's ``pettingzoo_env_to_vec_env`` does for Stable-Baselines3); every algorithm and
trainer works unchanged, and each agent's episode return is an episode return (training
statistics and evaluation average over agents). Requirement, checked with a clear error: all
agents share one observation and one action space.

Agents may leave before their copy's episode ends (PettingZoo removes an agent from ``agents``
once it is terminated or truncated). A departed agent's row keeps its final observation, earns
0 and is not ``valid`` (an *active mask*: trainers drop its rows, as they drop reset-only rows),
and the env gets no action for it. A copy's episode ends when every agent has ended; autoreset
is gymnasium's ``NEXT_STEP``: the step after that resets the copy, with reward 0 and its
agents' ``valid`` flags False. Agents may also join after the reset (in ``possible_agents``, not
in ``agents`` at the reset: spawning units), and leave and rejoin (respawn, after at least one
step away): until it joins, an agent's row is zeros, not ``valid`` and not observed; the step it
joins in is not ``valid`` either (it took no action; a reward the env gives it there is left
out, as on a reset-only step), and its observation from that step on starts its trajectory.
A copy's episode ends when no agent is left in it.

With ``policies: type`` (one policy per agent type, the name before a trailing ``_N``) or
``policies: agent`` (one per agent), :class:`~canter.envs.multiagent_views.MultiPolicyVecEnv`
steps the same copies and hands each policy the rows of its own agents (agents of different
policies may have different spaces; see :mod:`canter.trainers.multi_policy`); with ``policies:
joint`` (QMIX), :class:`~canter.envs.multiagent_views.JointParallelEnv` makes each copy one
sub-env. ``central_state`` (MAPPO) adds the global state to every agent's observation.

Action masks: agents whose observations are ``{"observation", "action_mask"}`` dicts, and those of an env that
reports them in ``infos[agent]["action_mask"]`` (found in the infos of one reset when the env is made; each
agent's mask is then moved into its observation), act and learn under them (:mod:`canter.envs.masks`).

Checked by hand with mpe2 1.1.1's ``simple_spread_v3`` (3 agents, 18 observations, Discrete(5)):
PPO with 4 copies (12 sub-envs), n_steps 128, batch 256, 4 epochs, lr 3e-4, ent_coef 0.01 went
from a uniform random policy's -26.2 per agent and episode (120 episodes) to -19.8 (30 evaluation
episodes) in 300k agent-steps, 74 s on this 2-core host. (mpe2 depends on pygame-ce; it ran installed with
``--no-deps``, when the ``video`` extra still named pygame, which installs the same ``pygame`` package.)
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from canter.envs.masks import MASK_KEY, OBS_KEY, MaskedBox, has_action_mask, mask_size, mask_width
from canter.envs.multiagent_ids import (PREFIX, PETTINGZOO_FAMILIES, PolicyModeError,  # noqa: F401 (re-exported)
                                       agent_type, family_hint, group_agents, is_multiagent, parallel_factory,
                                       trained_policies)
from canter.envs.packing import ObservationPacker, needs_packing
from canter.envs.vector import ACTIVE, OBSERVED, _observation_error
from canter.errors import CanterError, bad_env_kwargs, keyword_hint


class ParallelVectorEnv(gym.vector.VectorEnv):
    """``copies`` PettingZoo parallel envs stepped together, their agents grouped by policy.

    Group ``g``'s rows are its agents of every copy, copy-major. With one group (``policies:
    shared``) this is a gymnasium vector env whose sub-envs are all the agents; with several,
    :class:`MultiPolicyVecEnv` steps it through :meth:`step_groups`. With ``central_state`` (a
    centralised critic, MAPPO) each row's observation is ``[2, w]``: the agent's own observation,
    then :meth:`global_state` and the agent's one-hot index, each zero-padded to ``w``.
    """

    #: the groups' observation packers (Dict observations, action masks) are configuration, rebuilt with
    #: the env: an exact resume's snapshot (:mod:`canter.envs.state`) skips their list (and the placeholders)
    resume_skip = ("_packers", "_blank")

    def __init__(self, env_id: str, copies: int, env_kwargs: dict[str, Any] | None = None,
                 policies: str = "shared", central_state: bool = False, max_steps: int | None = None) -> None:
        #: ``max_steps`` (evaluation and play envs: :data:`~canter.envs.make.EVAL_EPISODE_CAP`): a copy's
        #: episode is truncated for every agent still in it after that many steps (None: the env's own ending)
        self.max_steps = max_steps
        self.steps = np.zeros(copies, dtype=np.int64)  # steps of each copy's episode
        factory = parallel_factory(env_id)
        try:
            self.envs = [factory(**(env_kwargs or {})) for _ in range(copies)]
        except TypeError as exc:  # a misspelled argument: answered with the closest one
            raise CanterError(f"bad env_kwargs for '{env_id}': {exc}{keyword_hint(factory, exc)}") from None
        except ImportError as exc:  # an env that imports its backend when made, not when its module is imported
            raise CanterError(f"env '{env_id}' is missing a dependency: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - a bad env_kwargs value
            raise bad_env_kwargs(env_id, env_kwargs, exc) from None
        first = self.envs[0]
        self.agents = list(first.possible_agents)
        if not self.agents:  # else an IndexError deep in the space checks
            self.close_extras()
            raise CanterError(f"'{env_id}' has no agents (its possible_agents is empty with env_kwargs "
                              f"{env_kwargs or {}})")
        self.env_id = env_id
        groups = group_agents(self.agents, policies)
        self.policies = list(groups)
        self.group_agents = list(groups.values())
        #: agent -> the size of its action mask, where the env reports masks in its infos rather than in its
        #: observations (they are moved into the observations, :meth:`_with_masks`); None: it does not
        #: (only agents whose actions can be masked: an agent with Box actions beside them keeps its observations)
        self._info_masks = (_info_mask_sizes(first, self.agents) if _masks_in_infos(first, self.agents) else None)
        space_of = first.observation_space if self._info_masks is None else (lambda a: gym.spaces.Dict(
            {OBS_KEY: first.observation_space(a), MASK_KEY: gym.spaces.MultiBinary(self._info_masks[a])})
            if a in self._info_masks else first.observation_space(a))
        #: each group's own observation space (what its agents observe)
        self.local_spaces = [self._group_space(space_of, g, policies, "observation") for g in groups.items()]
        self.action_spaces = [self._group_space(first.action_space, g, policies, "action") for g in groups.items()]
        #: per group, the packer of structured observations (Dict / Tuple, action masks; None: arrays)
        self._packers = [ObservationPacker(space, act) if needs_packing(space) else None
                         for space, act in zip(self.local_spaces, self.action_spaces)]
        self.local_spaces = [space if p is None else p.space for space, p in zip(self.local_spaces, self._packers)]
        self.n_agents = len(self.agents)
        self.group_rows = [copies * len(members) for members in self.group_agents]
        #: PettingZoo's ``state()`` where the env declares a ``state_space``; else the global state is
        #: every agent's observation, concatenated
        self.has_state = getattr(first, "state_space", None) is not None
        #: per group, the width of the action mask packed last in its observations (not part of the state)
        self._mask_widths = [mask_width(space) for space in self.local_spaces]
        width = {a: int(np.prod(space.shape)) - m
                 for members, space, m in zip(self.group_agents, self.local_spaces, self._mask_widths) for a in members}
        self.state_size = (int(np.prod(first.state_space.shape)) if self.has_state
                           else sum(width[a] for a in self.agents))
        self.central_state = central_state
        if central_state:
            try:
                self.refuse_images("a centralised critic (central_state, which mappo sets)",
                                   "train ppo without central_state (a CNN per policy: policies shared, type or agent)")
            except CanterError:
                self.close_extras()
                raise
        self.observation_spaces = ([self._central_space(space) for space in self.local_spaces] if central_state
                                   else self.local_spaces)
        self.num_envs = copies * self.n_agents
        if len(self.policies) == 1:
            self.single_observation_space, self.single_action_space = self.observation_spaces[0], self.action_spaces[0]
            self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, self.num_envs)
            self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self.metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}
        #: copies whose every agent has ended (the next step resets them)
        self.ended = np.zeros(copies, dtype=bool)
        #: ``[copies, n_agents]``: agents in their copy's episode now (in ``agents`` order): present at its
        #: reset or joined since, not ended
        self.alive = np.ones((copies, self.n_agents), dtype=bool)
        #: ``[copies, n_agents]``: agents whose observation is still shown (in the concatenated global
        #: state, and in QMIX's joint view): those alive before or after the last step, so an agent's final
        #: observation stays in the step it leaves in (the value that bootstraps a truncation sees it),
        #: and a joiner's first one in the step it joins in; zeros otherwise (left earlier, not yet joined)
        self.in_state = np.ones((copies, self.n_agents), dtype=bool)
        #: agent -> (group, position among the group's agents)
        self._where = {a: (g, j) for g, members in enumerate(self.group_agents) for j, a in enumerate(members)}
        self._index = {a: n for n, a in enumerate(self.agents)}  # agent -> its index in ``agents`` order
        #: per group, what an absent agent's row holds: 0, or a Discrete space's first value (``start``; 0 is outside
        #: Discrete(n, start=1), which the observation check refused and the model's one-hot encoding could not take)
        self._blank = [int(space.start) if isinstance(space, gym.spaces.Discrete) else 0 for space in self.local_spaces]
        self._obs = [np.full((rows, *space.shape), blank, space.dtype)
                     for rows, space, blank in zip(self.group_rows, self.local_spaces, self._blank)]
        #: per group, each row's agent index (in ``agents`` order)
        self._agent_ids = [np.tile([self.agents.index(a) for a in members], copies) for members in self.group_agents]
        #: each row's env copy (groups in ``policies`` order, rows copy-major): an evaluation episode is
        #: a copy's episode, every agent of it counted (:func:`~canter.trainers.evaluation.evaluate`)
        self.copy_index = np.concatenate([np.repeat(np.arange(copies), len(m)) for m in self.group_agents])
        #: per group, each row's agent name (the ``agent`` column of ``history.parquet``)
        self.row_agents = [np.tile(np.array(members, dtype=str), copies) for members in self.group_agents]

    def refuse_images(self, reader: str, instead: str) -> None:
        """A one-line error where an agent observes images or the env's ``state()`` is one: ``reader`` (a
        centralised critic's ``[2, w]`` rows, QMIX's joint rows) takes flat rows through fully connected
        layers, so every pixel would be a raw input (KAZ's image mode: a 354M-parameter MAPPO)."""
        from canter.models.cnn import is_image_space

        lead = f"{reader} reads each agent's observation and the global state as flat rows through fully connected "
        for members, space in zip(self.group_agents, self.local_spaces):
            images = [shape for _, shape in getattr(space, "images", ())]  # a Dict observation's image entries
            if is_image_space(space) or images:
                what = f"images {space}" if not images else f"Dict / Tuple observations with image entries {images}"
                raise CanterError(f"{lead}layers, not a CNN: agent '{members[0]}' of '{self.env_id}' observes {what}, "
                                  f"whose {int(np.prod(space.shape)):,} raw values would be inputs; {instead}")
        state_space = getattr(self.envs[0], "state_space", None) if self.has_state else None
        if state_space is not None and is_image_space(state_space):
            raise CanterError(f"{lead}layers, not a CNN: '{self.env_id}' declares a state_space, and its state() is "
                              f"an image {state_space}, whose {int(np.prod(state_space.shape)):,} raw pixel values "
                              f"would be inputs; {instead}")

    def _central_space(self, local: gym.Space) -> gym.Space:
        """``Box[2, w]``: an agent's own observation, then the critic's input (the global state and the
        agent's one-hot index), each zero-padded to ``w``; an action mask packed in the agent's
        observation goes to the last columns of the first row (a :class:`MaskedBox`)."""
        if not isinstance(local, gym.spaces.Box):
            raise CanterError(f"a centralised critic needs Box observations; the agents of '{self.env_id}' observe "
                              f"{type(local).__name__}; train ppo without central_state (each policy its own critic)")
        m = mask_width(local)
        width = max(int(np.prod(local.shape)) - m, self.state_size + self.n_agents) + m
        if not m:
            return gym.spaces.Box(-np.inf, np.inf, (2, width), np.float32)
        low, high = np.full((2, width), -np.inf), np.full((2, width), np.inf)
        low[:, -m:], high[:, -m:] = 0.0, 1.0
        return MaskedBox(low, high, m)

    def global_state(self) -> np.ndarray:
        """``[copies, state_size]`` float32: each copy's ``state()``, or its agents' observations
        concatenated (zeros for agents that left before the last step)."""
        if self.has_state:
            states = [np.asarray(env.state(), dtype=np.float32).reshape(-1) for env in self.envs]
            bad = next((s for s in states if s.size != self.state_size), None)
            if bad is not None:  # else a broadcast error (a traceback with several policies) blaming observations
                raise CanterError(f"the state() of '{self.env_id}' has {bad.size} values, but its state_space "
                                  f"{self.envs[0].state_space} has {self.state_size}")
            return np.stack(states)
        copies = len(self.envs)
        parts = []
        for n, agent in enumerate(self.agents):
            g, j = self._where[agent]
            rows = self._obs[g][j::len(self.group_agents[g])].reshape(copies, -1)
            m = self._mask_widths[g]  # an action mask packed last is not part of the state
            parts.append((rows[:, :-m] if m else rows) * self.in_state[:, n, None])
        return np.concatenate(parts, axis=1, dtype=np.float32)

    def _outputs(self) -> list[np.ndarray]:
        """Each group's observations: its agents' own, or (``central_state``) stacked with the critic's input."""
        if not self.central_state:
            return [obs.copy() for obs in self._obs]
        state, s = self.global_state(), self.state_size
        out = []
        for local, ids, space, members in zip(self._obs, self._agent_ids, self.observation_spaces, self.group_agents):
            rows = len(local)
            obs = np.zeros((rows, *space.shape), np.float32)
            flat = local.reshape(rows, -1)
            m = mask_width(space)
            obs[:, 0, :flat.shape[1] - m] = flat[:, :flat.shape[1] - m]
            if m:  # the agent's action mask: the last columns of its row
                obs[:, 0, -m:] = flat[:, -m:]
            obs[:, 1, :s] = np.repeat(state, len(members), axis=0)  # rows are copy-major
            obs[np.arange(rows), 1, s + ids] = 1.0
            out.append(obs)
        return out

    def _group_space(self, space_of: Any, group: tuple[str, list[str]], policies: str, kind: str) -> gym.Space:
        """The one ``kind`` space of a group's agents (a clear error when they differ)."""
        name, members = group
        spaces = [space_of(a) for a in members]
        if all(s == spaces[0] for s in spaces):
            return spaces[0]
        pad = "pad them (SuperSuit's pad_observations_v0 / pad_action_space_v0)"
        if policies == "joint":
            raise CanterError(f"the agents of '{self.env_id}' have different {kind} spaces; joint control (qmix) "
                              f"needs one: {pad}")
        if policies == "shared":
            what = f"the agents of '{self.env_id}' have different {kind} spaces; one shared policy needs one"
            raise PolicyModeError(f"{what}: pass --set policies=type (one policy per agent type) or {pad}",
                                  f"{what}: {pad}", "; a single policy saved out of a multi-policy run acts there only: "
                                  "use that run's own checkpoint, which acts with each policy")
        what = f"the '{name}' agents of '{self.env_id}' ({', '.join(members)}) have different {kind} spaces"
        raise PolicyModeError(f"{what}; pass --set policies=agent (one policy per agent)",
                              f"{what}; this run has one policy per agent type (policies: type): it acts on an env "
                              f"whose agents of a type share their spaces (one per agent: train with policies: agent)")

    def _with_masks(self, observations: dict[str, Any], infos: Any) -> dict[str, Any]:
        """``observations`` with each agent's mask from ``infos`` where the env reports its masks there (an agent
        without one: a mask that allows nothing, which :func:`~canter.envs.masks.allowed_actions` unmasks)."""
        if self._info_masks is None:
            return observations
        infos = infos if isinstance(infos, dict) else {}
        sizes = self._info_masks

        def mask(agent: Any) -> np.ndarray:
            found = (infos.get(agent) or {}).get(MASK_KEY)
            return np.zeros(sizes[agent], np.int8) if found is None else np.asarray(found, np.int8)

        return {a: {OBS_KEY: o, MASK_KEY: mask(a)} if a in sizes else o for a, o in observations.items()}

    def _put(self, copy: int, observations: dict[str, Any]) -> None:
        """Write one copy's observations into each group's rows (a departed agent's row keeps its
        final observation)."""
        for obs, members, pack, space in zip(self._obs, self.group_agents, self._packers, self.local_spaces):
            k = len(members)
            for j, agent in enumerate(members):
                if agent in observations:
                    try:
                        obs[copy * k + j] = observations[agent] if pack is None else pack(observations[agent])
                    except ValueError as exc:  # one line, whichever view steps the env (several policies too)
                        err = _observation_error(exc, space)
                        if err is exc:
                            raise
                        raise CanterError(f"agent '{agent}' of '{self.env_id}': {err}") from None

    def reset_groups(self, seed: int | list[int] | None = None, options: dict[str, Any] | None = None,
                     ) -> list[np.ndarray]:
        """Reset every copy (copy ``i`` with ``seed + i``, or ``seed[i]`` given one seed per copy, as
        gymnasium's vector envs take); each group's observations."""
        if isinstance(seed, (list, tuple)) and len(seed) != len(self.envs):
            raise ValueError(f"{len(seed)} seeds for {len(self.envs)} env copies")
        for i, env in enumerate(self.envs):
            s = seed if seed is None else int(seed[i]) if isinstance(seed, (list, tuple)) else int(seed) + i
            observations, infos = env.reset(seed=s, options=options)
            self._start(i, env, self._with_masks(observations, infos))
        self.ended[:] = False
        self.steps[:] = 0
        self.in_state[:] = self.alive
        return self._outputs()

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None,
              ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every copy (one group only; see :meth:`reset_groups`)."""
        self._one_group()
        return self.reset_groups(seed, options)[0], {OBSERVED: self.observed_rows()[0]}

    def _one_group(self) -> None:
        if len(self.policies) != 1:
            raise TypeError("an env of several policies is stepped through MultiPolicyVecEnv")

    def _start(self, copy: int, env: Any, observations: dict[str, Any]) -> None:
        """A copy's new episode: the agents in ``env.agents`` after its reset are in it; the rows of the others
        (agents that join later) are absent, placeholders (:attr:`_blank`), until they join."""
        present = [a for a in env.agents if a in self._where]
        if not present or len(present) != len(env.agents):
            raise CanterError(f"'{self.env_id}' has agents {sorted(map(str, env.agents))} after reset; canter needs "
                              f"at least one, and only agents of its possible_agents {sorted(map(str, self.agents))}")
        for obs, members, blank in zip(self._obs, self.group_agents, self._blank):
            k = len(members)
            obs[copy * k:(copy + 1) * k] = blank  # an absent agent's row: a placeholder that no transition uses
        self.alive[copy] = [a in present for a in self.agents]
        self._put(copy, self._observed(present, observations, "after reset"))

    def _observed(self, agents: list[Any], observations: dict[str, Any], when: str) -> dict[str, Any]:
        """``observations``, checked to hold those of ``agents`` (agents that start or join an episode)."""
        missing = [str(a) for a in agents if a not in observations]
        if missing:
            raise CanterError(f"agents {missing} of '{self.env_id}' are in its agents {when} but have no "
                              f"observation: an agent that starts or joins an episode needs one")
        return observations

    def _joined(self, copy: int, env: Any, before: np.ndarray, observations: dict[str, Any]) -> None:
        """Agents in ``env.agents`` after a step that were not in the episode before it join (or, having left,
        rejoin) it: their observation is the first of a new trajectory; the step itself is not theirs."""
        alive = self.alive[copy]
        joining = []
        for agent in env.agents:
            if agent not in self._where:
                raise CanterError(f"agent '{agent}' joined '{self.env_id}' during an episode, but it is not one of "
                                  f"its possible_agents {sorted(map(str, self.agents))}")
            n = self._index[agent]
            if before[n] and not alive[n]:
                raise CanterError(f"agent '{agent}' is still in the agents of '{self.env_id}' after its episode ended "
                                  f"(terminated or truncated) on this step; PettingZoo removes an agent that ended, "
                                  f"and one that comes back (a respawn) must be absent for at least one step")
            if not before[n]:
                alive[n] = True
                joining.append(agent)
        if joining:
            self._put(copy, {a: self._observed(joining, observations, "after a step")[a] for a in joining})

    def step_groups(self, actions: list[np.ndarray],
                    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """Step every copy with each group's actions (rows as in the observations); a copy that
        ended last step is reset. Per group: ``(obs, rewards, terminated, truncated, active, observed)``,
        ``active`` False for the rows of agents that were not in their copy's episode before this step (left,
        not yet joined, or joining on it) and of copies that this step reset, ``observed`` False for the rows
        of agents that had left before this step (their observation repeats their final one) or are not in
        the episode after it (zeros), True for the others (a reset copy's present agents too)."""
        copies = len(self.envs)
        acts = [np.asarray(a).reshape(copies, len(members), *space.shape)
                for a, members, space in zip(actions, self.group_agents, self.action_spaces)]
        rewards = [np.zeros(rows, dtype=np.float64) for rows in self.group_rows]
        terminated = [np.zeros(rows, dtype=bool) for rows in self.group_rows]
        truncated = [np.zeros(rows, dtype=bool) for rows in self.group_rows]
        active = [np.zeros(rows, dtype=bool) for rows in self.group_rows]
        where = self._where
        before = self.alive.copy()
        for i, env in enumerate(self.envs):
            if self.ended[i]:
                observations, infos = env.reset()
                self._start(i, env, self._with_masks(observations, infos))
                self.ended[i] = False
                self.steps[i] = 0
                continue
            alive = self.alive[i]
            step_actions = {}
            for agent in env.agents:  # each is in the episode: it started in it or joined it (_joined)
                g, j = where[agent]
                step_actions[agent] = acts[g][i, j]
            observations, rew, term, trunc, infos = env.step(step_actions)
            observations = self._with_masks(observations, infos)
            self._put(i, {a: o for a, o in observations.items() if a in where and alive[self._index[a]]})
            self.steps[i] += 1
            capped = self.max_steps is not None and self.steps[i] >= self.max_steps
            for n, agent in enumerate(self.agents):
                if not alive[n]:
                    continue
                if agent not in term or agent not in trunc or agent not in rew:
                    raise CanterError(f"agent '{agent}' left '{self.env_id}' without being terminated or truncated")
                g, j = where[agent]
                row = i * len(self.group_agents[g]) + j
                active[g][row] = True
                rewards[g][row] = rew[agent]
                terminated[g][row] = term[agent]
                truncated[g][row] = trunc[agent] or (capped and not term[agent])
                if terminated[g][row] or truncated[g][row]:
                    alive[n] = False
            if not capped:  # else the cap ended the copy's episode for every agent, in env.agents or joining
                self._joined(i, env, before[i], observations)
            self.ended[i] = not alive.any()
        np.logical_or(before, self.alive, out=self.in_state)  # a reset copy: every agent present at its reset
        return list(zip(self._outputs(), rewards, terminated, truncated, active, self.observed_rows()))

    def observed_rows(self) -> list[np.ndarray]:
        """Per group, the rows of the last observations that are real ones (:data:`~canter.envs.vector.OBSERVED`):
        False for agents that had left before the last step (a repeated final observation) and for agents not
        yet in the episode (a placeholder: zeros, or a Discrete space's start)."""
        return [self.in_state[np.arange(rows) // len(members), ids]
                for rows, members, ids in zip(self.group_rows, self.group_agents, self._agent_ids)]

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every copy (one group only; see :meth:`step_groups`)."""
        self._one_group()
        obs, rewards, terminated, truncated, active, observed = self.step_groups([actions])[0]
        return obs, rewards, terminated, truncated, {ACTIVE: active, OBSERVED: observed}

    def close_extras(self, **kwargs: Any) -> None:
        """Close every copy, also those after one whose ``close()`` raises (the first error is raised after)."""
        from canter.envs.vector import close_each

        error = close_each(self.envs)
        if error is not None:
            self.closed = True  # (gymnasium sets it after close_extras returns)
            raise error


def _info_mask_sizes(env: Any, agents: list[Any]) -> dict[Any, int]:
    """Agent -> the size of its action mask, for the agents of ``env`` (whose masks are in its infos) that act in a
    space a mask applies to (Discrete, MultiDiscrete, MultiBinary): one with Box actions beside them has none (its
    action space was a one-line error about action masks, refusing the env)."""
    sizes = {}
    for agent in agents:
        try:
            sizes[agent] = mask_size(env.action_space(agent))
        except CanterError:  # Box actions: nothing to mask
            continue
    return sizes


def _masks_in_infos(env: Any, agents: list[Any]) -> bool:
    """Whether ``env`` (a PettingZoo parallel env whose observations carry no action mask) reports its agents'
    masks in its infos, ``infos[agent]["action_mask"]`` (PettingZoo allows either place): looked at after a reset
    (one that fails here fails again, with its message, when the run resets the env)."""
    if any(has_action_mask(env.observation_space(a)) for a in agents):
        return False
    try:
        _, infos = env.reset()
    except Exception:  # noqa: BLE001 - reported by the run's own reset
        return False
    return isinstance(infos, dict) and any(MASK_KEY in (info or {}) for info in infos.values()
                                           if isinstance(info, dict))
