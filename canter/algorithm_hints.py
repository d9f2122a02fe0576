"""The algorithms a refusal of an env's spaces names (a wrong action space, action masks an algorithm does not
apply). Those for PettingZoo parallel envs only (mappo; qmix, whose agents act in Discrete spaces, joined) are named
apart, 'on a PettingZoo parallel env': a space check does not know whether the env is a parallel one, a turn-based
game or a single-agent one, where they are refused."""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


#: trainer families that learn on-policy from fresh rollouts: one group for the hint of a wrong action space (MAPPO's
#: refusal of MultiDiscrete named a2c, npg, ppo, reinforce, trpo, DQN's and SAC's appo, impala, recurrent_ppo too)
_ON_POLICY_FAMILIES = ("on_policy", "on_policy_recurrent", "async")


def _learns_as(family: str) -> str:
    """How an algorithm of trainer ``family`` learns: ``on_policy`` for :data:`_ON_POLICY_FAMILIES`, else ``family``."""
    return "on_policy" if family in _ON_POLICY_FAMILIES else family


def _takes(algo: Any, action_space: gym.Space) -> bool:
    """Whether ``algo`` acts in ``action_space`` (qmix: an agent's Discrete one, which it joins; an unbounded Box
    not where the algorithm squashes its actions into the bounds: DQN's refusal of one named ddpg, sac, td3, tqc,
    which refuse it too)."""
    if getattr(algo, "joint_agents", False):
        return isinstance(action_space, gym.spaces.Discrete)
    if getattr(algo, "squashed_actions", False) and isinstance(action_space, gym.spaces.Box) and not (
            np.isfinite(action_space.low).all() and np.isfinite(action_space.high).all()):
        return False
    return isinstance(action_space, algo.action_spaces)


def _split(able: dict[str, bool]) -> tuple[list[str], str]:
    """The names of ``able`` (name -> multiagent_only): the others sorted, the parallel-env ones joined."""
    return (sorted(n for n, multi in able.items() if not multi),
            ", ".join(sorted(n for n, multi in able.items() if multi)))


def wrong_space_hint(cls: Any, action_space: gym.Space) -> str:
    """The hint of a wrong action space: the algorithms that learn as ``cls`` does (:func:`_learns_as`; else, for an
    algorithm that trains in an env, those of every family that does: not the offline ones) that act in
    ``action_space``, a variant of ``cls``
    first (``sac`` on Discrete actions: sac_discrete), those for parallel envs apart."""
    from canter.registry import registered

    algos = registered("algorithm")
    able: dict[str, bool] = {}
    offline = getattr(cls, "family", "") == "offline"
    for same in (True, False) if not offline else (True,):  # a dataset's actions: no online algorithm takes it
        able = {n: a.multiagent_only for n, a in algos.items()
                if (_learns_as(a.family) == _learns_as(cls.family) if same else a.family != "offline")
                and _takes(a, action_space)}
        if able:
            break
    single, parallel = _split(able)
    kind = type(action_space).__name__
    if offline and not able:  # it named the online ones (ppo, a2c, ...), which refuse --dataset
        return f"; no offline algorithm learns from {kind} actions"
    if not single:
        return f"; for {kind} actions on a PettingZoo parallel env: {parallel}" if parallel else _none_takes(
            action_space)
    also = f"on a PettingZoo parallel env also {parallel}" if parallel else ""
    variant = [n for n in single if n.split("_")[0] == cls.name.split("_")[0]]
    if variant:
        rest = [n for n in single if n != variant[0]]
        listed = "; ".join(x for x in (", ".join(rest) and f"or {', '.join(rest)}", also) if x)
        return f"; for {kind} actions use {variant[0]}" + (f" ({listed})" if listed else "")
    return f"; algorithms for {kind} actions: {', '.join(single)}" + (f" ({also})" if also else "")


def _none_takes(action_space: gym.Space) -> str:
    """The hint for an action space that no algorithm acts in (a ``Tuple`` or ``Dict`` of actions): the one space
    its entries make (a ``MultiDiscrete`` of discrete entries, a ``Box`` of Box entries) with the algorithms for that
    space, or how to give one; it named no algorithm (a bare 'needs a Discrete action space')."""
    kind = type(action_space).__name__
    entries = list(getattr(action_space, "spaces", {}).values() if isinstance(action_space, gym.spaces.Dict)
                   else getattr(action_space, "spaces", ()))
    discrete = (gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
    flat: gym.Space | None = None
    if entries and all(isinstance(e, discrete) for e in entries):
        flat = gym.spaces.MultiDiscrete([2, 2])
    elif entries and all(isinstance(e, gym.spaces.Box) for e in entries):
        flat = gym.spaces.Box(-1.0, 1.0, (2,))
    how = ("; no canter algorithm acts in a " + kind + " action space: give the env one action space, e.g. with a "
           "gymnasium.ActionWrapper in an env factory of your own (@canter.register('env', ...))")
    if flat is None:
        return how + " (a MultiDiscrete of discrete entries, or a Box of continuous ones)"
    target = type(flat).__name__
    listed = ", ".join(_split({n: a.multiagent_only for n, a in _online().items() if _takes(a, flat)})[0])
    return how + f": its entries as one {target} ({target} actions: {listed})"


def _online() -> dict[str, Any]:
    """The registered algorithms that train in an env (not the offline ones)."""
    from canter.registry import registered

    return {n: a for n, a in registered("algorithm").items() if a.family != "offline"}


def mask_hint(cls: Any, action_space: gym.Space) -> str:
    """The hint of an algorithm that does not apply the env's action masks: the masking algorithms that would take
    the env as ``cls`` would (its action space, online or offline as ``cls`` is), those for parallel envs apart."""
    from canter.registry import registered

    offline = getattr(cls, "family", "") == "offline"
    able = {n: a.multiagent_only for n, a in registered("algorithm").items()
            if getattr(a, "action_masks", False) and (a.family == "offline") == offline and _takes(a, action_space)}
    single, parallel = _split(able)
    hint = f"; algorithms that do: {', '.join(single)}" if single else ""
    if parallel:
        hint += f" (on a PettingZoo parallel env also {parallel})" if single else f"; on a PettingZoo parallel env: {parallel}"
    return hint
