"""The Agent of recurrent policies: it carries each env's memory from one call to the next."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from canter.agents.agent import EXPLORE_LOCK, Agent, check_generator
from canter.algorithms.base import ActOutput
from canter.errors import CanterError, bool_argument, keywords_checked
from canter.registry import lookup, register
from canter.utils import set_torch_threads


#: the hint for sb3-contrib's ``predict(obs, state, episode_start)`` given to :meth:`RecurrentAgent.predict`
_WITH_STATE = ("sb3-contrib's predict(obs, state, episode_start), with the memory kept by the caller, is "
               "agent.predict_with_state(obs, state, episode_start), which returns (actions, state)")


def _memory_pair(value: Any) -> bool:
    """Whether ``value`` is a recurrent memory, an ``(h, c)`` pair of ``[layers, batch, units]`` arrays or tensors (as
    :meth:`RecurrentAgent.predict_with_state` returns), rather than episode starts."""
    return isinstance(value, (tuple, list)) and len(value) == 2 and all(np.ndim(v) == 3 for v in value)


@register("agent", "recurrent_agent")
class RecurrentAgent(Agent):
    """An :class:`~canter.agents.Agent` for recurrent algorithms (``act_recurrent``): ``sample``
    (training), ``predict`` (evaluation, play) and ``explore`` each keep one memory row per env of
    the batch they act on. :meth:`begin_episodes` zeroes the rows whose env starts an episode (the trainers,
    ``evaluate`` and ``play`` call it); ``predict(obs, episode_start)`` does the same for callers of
    the Python API. A batch of another size starts from empty memory."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.memory: dict[str, Any] = {"sample": None, "predict": None, "explore": None}

    def _memory(self, kind: str, batch: int) -> Any:
        state = self.memory[kind]
        if state is None or state[0].shape[1] != batch:
            state = self.memory[kind] = self.algorithm.model.initial_state(batch)
        return state

    def begin_episodes(self, starts: np.ndarray | list[bool], training: bool = False, exploring: bool = False) -> None:
        """Zero the memory of the envs where ``starts`` (bool ``[B]``: an array, list or tuple) is true: the
        evaluation memory of :meth:`predict`, or ``training`` the one of :meth:`sample`, or ``exploring`` the one
        of :meth:`explore`."""
        self._zero_memory("sample" if training else "explore" if exploring else "predict", starts)

    def _zero_memory(self, kind: str, starts: np.ndarray | list[bool]) -> None:
        """Zero memory ``kind``'s rows where ``starts``; a batch of another size empties it."""
        starts = np.asarray(starts, dtype=bool).reshape(-1)
        state = self.memory[kind]
        if state is not None and state[0].shape[1] != len(starts):  # a batch of another size: empty memory
            self.memory[kind] = state = None
        if state is None or not starts.any():
            return
        self.memory[kind] = _zeroed(state, starts)

    @keywords_checked("agent.predict", {"state": _WITH_STATE}, positional=_WITH_STATE)
    def predict(self, obs: Any, episode_start: np.ndarray | bool | None = None,  # type: ignore[override]
                *, deterministic: bool = True) -> np.ndarray | np.generic:
        """Deterministic actions, advancing the evaluation memory (``episode_start``: zero those rows
        first). One observation (with a bool ``episode_start``) gives one action, a batch a batch, as
        :meth:`Agent.predict <canter.agents.Agent.predict>`; one observation is a batch of one env.
        For a batch, ``episode_start`` is one bool per row (a single bool applies to every row).
        ``deterministic=False``: :meth:`explore` (sampled actions, with the exploring memory)."""
        if _memory_pair(episode_start):  # sb3-contrib's predict(obs, state): the state went to episode_start
            raise CanterError(f"agent.predict() got an (h, c) memory pair for episode_start; {_WITH_STATE}")
        if not bool_argument("deterministic", deterministic):  # 'no' was truthy, None falsy
            return self.explore(obs, episode_start=episode_start)
        return self._act_with_memory("predict", obs, episode_start, deterministic=True)

    @keywords_checked("agent.predict_with_state")
    def predict_with_state(self, obs: Any, state: tuple[Any, Any] | None = None,
                           episode_start: np.ndarray | bool | None = None, *,
                           deterministic: bool = True,
                           ) -> tuple[np.ndarray | np.generic, tuple[np.ndarray, np.ndarray]]:
        """Actions and the memory after them, from a memory the caller keeps (sb3-contrib's
        ``predict(obs, state, episode_start)``): several loops can share the agent, which :meth:`predict`'s
        own memory does not allow. ``state`` None (the first call) starts from empty memory; else the
        ``(h, c)`` pair (NumPy arrays or tensors ``[layers, batch, units]``) a previous call returned.
        ``episode_start`` zeroes those rows first. The agent's own memories stay as they are. Acting needs no
        values: a critic LSTM's half of the memory comes back as it went in."""
        deterministic = bool_argument("deterministic", deterministic)
        obs, single = self.as_batch(obs)
        x = self._tensor(np.ascontiguousarray(self.normalize_obs(obs)))
        if state is None:
            memory = self.algorithm.model.initial_state(len(x))
        else:
            fresh = self.algorithm.model.initial_state(len(x))
            try:
                memory = tuple(torch.as_tensor(np.asarray(s) if not isinstance(s, torch.Tensor) else s,
                                               dtype=f.dtype, device=f.device) for s, f in zip(state, fresh))
            except (TypeError, ValueError, RuntimeError) as exc:
                raise CanterError(f"state must be the (h, c) pair a previous call returned, got {type(state).__name__}: "
                                  f"{exc}") from None
            if len(memory) != 2 or any(m.shape != f.shape for m, f in zip(memory, fresh)):
                got = [tuple(m.shape) for m in memory]
                raise CanterError(f"state must be the (h, c) pair a previous call returned for {len(x)} observation"
                                  f"{'' if len(x) == 1 else 's'}: shapes {[tuple(f.shape) for f in fresh]}, got {got}")
        if episode_start is not None:
            memory = _zeroed(memory, self._starts(episode_start, len(x)))
        caller = set_torch_threads(self.acting_threads)
        try:
            with torch.inference_mode():
                out, new = self.algorithm.act_recurrent(x, memory, deterministic=deterministic, values=False)
        finally:
            if caller is not None:
                torch.set_num_threads(caller)
        actions = self.to_env_actions(out.actions)
        return (actions[0] if single else actions), (new[0].cpu().numpy(), new[1].cpu().numpy())

    @staticmethod
    def _starts(episode_start: np.ndarray | bool, batch: int) -> np.ndarray:
        """``episode_start`` as one bool per row of a ``batch`` (a single bool applies to every row)."""
        starts = np.atleast_1d(np.asarray(episode_start, dtype=bool))
        if starts.shape == (1,):
            starts = np.repeat(starts, batch)
        if starts.shape != (batch,):
            raise CanterError(f"episode_start needs one bool per observation of the batch ({batch}), got "
                              f"shape {starts.shape}")
        return starts

    @keywords_checked("agent.explore")
    def explore(self, obs: Any, generator: torch.Generator | None = None,
                episode_start: np.ndarray | bool | None = None) -> np.ndarray | np.generic:
        """Sampled actions, as :meth:`predict` but exploring and with a memory of their own (the
        training and evaluation memories stay as they are); ``generator`` as in
        :meth:`Agent.explore <canter.agents.Agent.explore>`."""
        check_generator(generator)
        algorithm = self.algorithm
        with EXPLORE_LOCK:  # as Agent.explore: the generator swapped back before another thread's call swaps it
            own, algorithm.generator = algorithm.generator, generator or algorithm.generator
            try:
                return self._act_with_memory("explore", obs, episode_start, deterministic=False)
            finally:
                algorithm.generator = own

    def _act_with_memory(self, kind: str, obs: np.ndarray, episode_start: np.ndarray | bool | None,
                         deterministic: bool) -> np.ndarray:
        """Act on ``obs`` from memory ``kind`` (its rows zeroed first where ``episode_start``), advancing it."""
        obs, single = self.as_batch(obs)
        x = self._tensor(np.ascontiguousarray(self.normalize_obs(obs)))
        state = self._memory(kind, len(x))
        if episode_start is not None:
            self._zero_memory(kind, self._starts(episode_start, len(x)))
            state = self.memory[kind]
        caller = set_torch_threads(self.acting_threads)  # the run's count, not the caller's
        try:
            with torch.inference_mode():
                out, self.memory[kind] = self.algorithm.act_recurrent(x, state, deterministic=deterministic,
                                                                      values=False)
        finally:
            if caller is not None:
                torch.set_num_threads(caller)
        actions = self.to_env_actions(out.actions)
        return actions[0] if single else actions

    def sample(self, obs: np.ndarray, observed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, ActOutput]:
        """Exploring actions, advancing the training memory (``observed`` as in :meth:`Agent.sample`)."""
        self.check_batch(obs)
        x = np.ascontiguousarray(self.normalize_obs(obs, update=True, observed=observed))
        state = self._memory("sample", len(x))
        with torch.inference_mode():
            out, self.memory["sample"] = self.algorithm.act_recurrent(self._tensor(x), state, deterministic=False)
        out = self.on_host(out)
        return self.to_env_actions(out.actions), x, out

    def value(self, obs: np.ndarray) -> torch.Tensor:
        """V(obs) from the training memory (bootstrapping a rollout's last observation); a batch of another size than
        the training envs' (a callback's call) from empty memory, the training memory left as it is (it was
        replaced by an empty one of that size, so the rollout went on from a wiped memory). One observation (or a
        list, a tensor: :meth:`as_batch`) is a batch of one and gives one value, a 0-d tensor, as
        :meth:`Agent.value <canter.agents.Agent.value>` (it was torch's LSTM input-size traceback)."""
        if not (isinstance(obs, np.ndarray) and obs.ndim == len(self.observation_space.shape) + 1):
            x, single = self.as_batch(obs)
            return self.value(x)[0] if single else self.value(x)
        x = self.obs_to_tensor(obs)
        state = self.memory["sample"]
        if state is None or state[0].shape[1] != len(x):
            state = self.algorithm.model.initial_state(len(x))
        with torch.inference_mode():
            return self.algorithm.value_recurrent(x, state)

    def training_memory(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        """A copy of the training memory (``batch`` envs)."""
        h, c = self._memory("sample", batch)
        return h.clone(), c.clone()

    def set_training_memory(self, state: tuple[torch.Tensor, torch.Tensor]) -> None:
        """Restore the training memory (exact resume), on the algorithm's device."""
        self.memory["sample"] = (state[0].to(self.device, copy=True), state[1].to(self.device, copy=True))


def _zeroed(state: tuple[torch.Tensor, torch.Tensor], starts: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """The memory ``state`` with the rows (envs) where ``starts`` is true zeroed."""
    keep = torch.from_numpy(~starts).to(state[0].device, state[0].dtype).view(1, -1, 1)
    return state[0] * keep, state[1] * keep


def check_agent_fits(algo_cls: type, agent_cls: type, agent_name: str) -> None:
    """Refuse an ``agent`` setting that cannot drive the algorithm: an algorithm that names its own
    agent class (``agent_class``: recurrent PPO's memory-carrying ``recurrent_agent``) needs that class
    or a subclass, and a recurrent agent needs an algorithm that acts from a memory (``act_recurrent``)."""
    needed = getattr(algo_cls, "agent_class", None)
    name = getattr(algo_cls, "name", algo_cls.__name__)
    if not isinstance(agent_cls, type):
        return  # not a class: building the agent reports it
    if needed and not issubclass(agent_cls, lookup("agent", needed)):
        raise CanterError(f"{name} needs the agent '{needed}' (or a subclass of it), not '{agent_name}'; "
                          f"remove the agent setting")
    if issubclass(agent_cls, RecurrentAgent) and not callable(getattr(algo_cls, "act_recurrent", None)):
        raise CanterError(f"the agent '{agent_name}' carries a recurrent memory and needs a recurrent algorithm "
                          f"(recurrent_ppo), not {name}; remove the agent setting")
