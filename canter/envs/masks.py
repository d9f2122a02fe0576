"""Invalid-action masks: envs whose observations say which actions are allowed.

An env with a ``Dict`` observation space holding ``"observation"`` and ``"action_mask"`` (the
PettingZoo convention; ``action_mask[a]`` is 1 where action ``a`` is allowed; for ``MultiDiscrete``
and ``MultiBinary`` actions one entry per choice of each sub-action, concatenated, as sb3-contrib's
MaskablePPO takes them: :func:`mask_size`) is wrapped by
:class:`~canter.envs.packing.PackObservations`: each observation becomes one flat float32 vector,
the observation's values followed by the mask, in a :class:`MaskedBox` space that records the
mask's width. So
vector envs, rollout and replay buffers, datasets and explorers store masks with the
observations they belong to, without knowing about them, and a checkpoint's observation space
says that its policy acts under masks.

The models split the mask off again (:func:`split_mask`): the networks see only the
observation, and the policy's logits (or the Q values used to pick and bootstrap actions) of
masked actions are replaced by :data:`MASKED` (:func:`apply_mask`; Q values, which have no lower
bound, by a value below their row's lowest: :func:`apply_mask_below`), so sampling, the greedy
action, log-probabilities, entropies and TD targets all range over the allowed actions only.
A row whose mask allows nothing (a final observation, where some envs clear the mask) is
treated as unmasked; with factored actions, each sub-action's part of the mask on its own.
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from canter.errors import CanterError
from canter.utils import wrapper_method

#: what a masked action's logit or Q value becomes: exp() of it is exactly 0 in float32, and it
#: stays finite, so ``p * log p`` terms are 0 rather than NaN (SB3-contrib's MaskablePPO uses the same)
MASKED = -1e8
OBS_KEY, MASK_KEY = "observation", "action_mask"


class MaskedBox(gym.spaces.Box):
    """A float32 Box whose last ``mask_width`` entries along its last axis are an action mask (0 or
    1): a flat vector for one agent, or one mask per row of a joint observation (QMIX)."""

    def __init__(self, low: np.ndarray, high: np.ndarray, mask_width: int, seed: Any = None) -> None:
        super().__init__(low=np.asarray(low, np.float32), high=np.asarray(high, np.float32), dtype=np.float32, seed=seed)
        self.mask_width = int(mask_width)

    def observation_space(self) -> gym.spaces.Box:
        """The space of the observation part (the entries before the mask)."""
        k = self.mask_width
        return gym.spaces.Box(self.low[..., :-k], self.high[..., :-k], dtype=np.float32)

    def __repr__(self) -> str:
        return f"MaskedBox({self.observation_space().shape} + mask of {self.mask_width})"


def mask_width(space: gym.Space) -> int:
    """The width of the action mask packed into ``space``'s observations (0: none)."""
    return getattr(space, "mask_width", 0) if isinstance(space, MaskedBox) else 0


def mask_size(action_space: gym.Space) -> int:
    """How many entries an action mask for ``action_space`` holds: one per action of a ``Discrete``;
    one per choice of each sub-action, concatenated, for ``MultiDiscrete`` (``sum(nvec)``) and
    ``MultiBinary`` (``2 * n``: "0 allowed", "1 allowed" per entry), as sb3-contrib's MaskablePPO
    reads them. Other action spaces cannot be masked (a one-line :class:`CanterError`)."""
    from canter.envs.spaces import action_nvec

    nvec = action_nvec(action_space)
    if nvec is not None:
        return int(nvec.sum())
    if isinstance(action_space, gym.spaces.Discrete):
        return int(action_space.n)
    raise CanterError(f"action masks need a Discrete, MultiDiscrete or MultiBinary action space, not "
                      f"{type(action_space).__name__}")


def mask_layout(action_space: gym.Space) -> str:
    """What the entries of ``action_space``'s mask are, for error messages."""
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        return f"sum(nvec) of MultiDiscrete({np.asarray(action_space.nvec).reshape(-1).tolist()})"
    if isinstance(action_space, gym.spaces.MultiBinary):
        return f"2 per entry of MultiBinary({np.asarray(action_space.n).tolist()})"
    return "one per action"


def check_mask_length(size: int, action_space: gym.Space, where: str = "the action mask") -> None:
    """Refuse a mask of ``size`` entries for ``action_space`` in one line giving the expected and
    actual lengths."""
    expected = mask_size(action_space)
    if size != expected:
        raise CanterError(f"{where} has {size} entries, expected {expected} ({mask_layout(action_space)})")


def has_action_mask(space: gym.Space) -> bool:
    """True for a ``Dict`` observation space in the mask convention: an ``action_mask`` entry and the
    observation in the others (usually one, ``observation``)."""
    return isinstance(space, gym.spaces.Dict) and MASK_KEY in space.spaces and len(space.spaces) > 1


class InfoActionMask(gym.Wrapper):
    """An env that reports its action mask in ``info[key]`` (gymnasium's ``Taxi-v4`` does) with the
    mask moved into its observations, in the ``{"observation", "action_mask"}`` convention that
    canter's vector envs pack. Register the wrapped env to train on it::

        gym.register("TaxiMasked-v4", entry_point=lambda **kw: InfoActionMask(gym.make("Taxi-v4", **kw)))
    """

    def __init__(self, env: gym.Env, key: str = MASK_KEY) -> None:
        super().__init__(env)
        self.key = key
        self.observation_space = gym.spaces.Dict(
            {OBS_KEY: env.observation_space, MASK_KEY: gym.spaces.MultiBinary(mask_size(env.action_space))})

    def _mask(self, info: dict[str, Any]) -> Any:
        """The mask of the observation that came with ``info``."""
        if self.key not in info:
            raise CanterError(f"the env's info has no '{self.key}' entry (InfoActionMask reads the mask there)")
        return info[self.key]

    def _with_mask(self, obs: Any, info: dict[str, Any]) -> dict[str, Any]:
        return {OBS_KEY: obs, MASK_KEY: np.asarray(self._mask(info), np.int8)}

    def reset(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]]:  # noqa: D102
        obs, info = self.env.reset(**kwargs)
        return self._with_mask(obs, info), info

    def step(self, action: Any) -> tuple[dict[str, Any], Any, bool, bool, dict[str, Any]]:  # noqa: D102
        obs, reward, terminated, truncated, info = self.env.step(action)
        return self._with_mask(obs, info), reward, terminated, truncated, info


class MethodActionMask(InfoActionMask):
    """An env whose ``action_masks()`` method (``method``) answers which actions are allowed now, as
    sb3-contrib's ``MaskablePPO`` asks it (its ``ActionMasker`` wrapper adds the method to any env): the
    mask moved into the observations, as :class:`InfoActionMask` does with a mask in ``info``. It is
    called after every ``reset`` and ``step``, through the env's wrappers. Register the wrapped env::

        gym.register("MyMasked-v0", entry_point=lambda **kw: MethodActionMask(MyEnv(**kw)))
    """

    def __init__(self, env: gym.Env, method: str = "action_masks") -> None:
        if wrapper_method(env, method) is None:
            raise CanterError(f"the env has no {method}() method (MethodActionMask calls it for the action mask)")
        super().__init__(env, key=method)

    def _mask(self, info: dict[str, Any]) -> Any:
        """What the env's mask method answers now."""
        return self.env.get_wrapper_attr(self.key)()


# -- the models' side ---------------------------------------------------------------------------
def split_mask(obs: Any, width: int, nvec: Any = None) -> tuple[Any, Any]:
    """``(observation part, allowed)`` of a packed batch ``[..., d + width]`` (torch or NumPy):
    ``allowed`` is a bool ``[..., width]``, all true where the mask allows nothing (with factored
    actions, ``nvec`` the categories of each sub-action: in each sub-action's entries on their own)."""
    return obs[..., :-width], allowed_actions(obs[..., -width:], nvec)


def allowed_actions(mask: Any, nvec: Any = None) -> Any:
    """The bool ``[..., width]`` of the 0/1 ``mask`` (torch or NumPy), all true where it allows
    nothing: over the whole row, or (``nvec``: a factored action's categories per sub-action) over
    each sub-action's entries on their own (sb3-contrib's masked MultiCategorical would make such a
    sub-action uniform; here, as a Discrete row that allows nothing, it is left unmasked)."""
    allowed = mask > 0.5
    torch_ = isinstance(allowed, torch.Tensor)
    if nvec is None or len(nvec) == 1:
        return allowed | (~allowed.any(-1, keepdim=True) if torch_ else ~allowed.any(-1, keepdims=True))
    from canter.models.distributions import segments

    parts = [allowed[..., s] for s in segments(nvec)]
    if torch_:
        return torch.cat([p | ~p.any(-1, keepdim=True) for p in parts], -1)
    return np.concatenate([p | ~p.any(-1, keepdims=True) for p in parts], -1)


def apply_mask(values: Any, allowed: Any, fill: float = MASKED) -> Any:
    """``values`` ``[..., n]`` (logits or Q values, torch or NumPy) with disallowed entries set to
    ``fill``, :data:`MASKED` unless given (autograd: no gradient reaches them)."""
    if isinstance(values, torch.Tensor):
        return values.masked_fill(~allowed, fill)
    return np.where(allowed, values, np.float32(fill)).astype(values.dtype, copy=False)


def masked_value_below(lowest: float) -> float:
    """What a masked action's Q value becomes where every Q value is at least ``lowest`` (a C51
    support's first atom): :data:`MASKED`, or ``2 * lowest - 1`` (-inf past float32's range) where
    ``lowest`` is not well above MASKED, so a masked action never ties or beats an allowed one."""
    fill = min(MASKED, 2.0 * lowest - 1.0)
    return fill if fill >= -float(np.finfo(np.float32).max) else float("-inf")


def apply_mask_below(values: Any, allowed: Any) -> Any:
    """``values`` ``[..., n]`` (Q values, torch or NumPy) with disallowed entries set below every entry
    of their row: :data:`MASKED`, or ``2 * min - 1`` (-inf past float32's range) where the row's
    minimum is not well above MASKED. For Q values that have no lower bound (DQN, QR-DQN, IQN): a
    fixed MASKED would beat allowed actions whose values lie below it, so the greedy (and
    bootstrapped) action would be a disallowed one. No gradient reaches the disallowed entries."""
    if isinstance(values, torch.Tensor):
        lowest = values.detach().amin(-1, keepdim=True)
        return torch.where(allowed, values, (2.0 * lowest - 1.0).clamp(max=MASKED))
    lowest = values.min(-1, keepdims=True)
    with np.errstate(over="ignore"):
        fill = np.minimum(2 * lowest - 1, values.dtype.type(MASKED))
    return np.where(allowed, values, fill).astype(values.dtype, copy=False)


def random_allowed(allowed: np.ndarray, generator: torch.Generator) -> np.ndarray:
    """One uniformly random allowed action per row of ``allowed`` ``[..., n]`` (epsilon-greedy exploration)."""
    u = torch.rand(allowed.shape, generator=generator).numpy()
    return np.where(allowed, u, -1.0).argmax(-1)
