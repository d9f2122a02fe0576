"""Non-finite values in a checkpoint's agent state: a checkpoint saved from a run that diverged, or damaged bits that
still parse (and that the sha256 does not catch where the .json was written with them), held NaN weights that
loaded silently and then acted, or trained, with NaN.

Loading to look at it (``canter.load``, ``canter eval``, ``canter play``) warns, naming the checkpoint and the first
such tensor, and loads it: a diverged run's last checkpoint stays inspectable. Training from it (``--resume``,
``init_from``) is refused in one line. NaN is looked for in every floating-point tensor of the agent's state;
infinity only in its networks' (``modules``): an infinite value elsewhere can be meant (SAC's ``log_alpha`` is
``-inf`` for a fixed entropy coefficient of 0). The trainer's state (a replay buffer, the envs' observations) is not
looked at: an env may observe infinity.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from canter.errors import CanterError, CanterWarning, warn


def nonfinite_tensors(tree: Any, weights_only: bool = False) -> list[str]:
    """The dotted paths (``agent.algorithm.modules...``) of the floating-point tensors and arrays of ``tree`` (an
    agent's state) that hold NaN, or infinity under a ``modules`` key; ``weights_only``: the optimizers' state (which
    such a load does not restore) is left out."""
    from canter.checkpoint import flatten_state

    return _nonfinite(flatten_state(tree, "agent")[1].items(), weights_only)


def nonfinite_in_file(base: Path, weights_only: bool = False) -> list[str]:
    """:func:`nonfinite_tensors` of checkpoint ``base``'s agent, read from its ``.safetensors`` without the rest (a
    replay buffer) or any check (``load_checkpoint`` makes those when it loads it): for a check before a build."""
    from safetensors import safe_open

    with safe_open(str(base.with_name(base.name + ".safetensors")), framework="pt") as f:
        keys = [k for k in f.keys() if k.startswith("agent.")
                and not (weights_only and "optimizers" in k.split("."))]
        return _nonfinite(((k, f.get_tensor(k)) for k in keys), weights_only)


def _nonfinite(items: Iterable[tuple[str, torch.Tensor]], weights_only: bool) -> list[str]:
    found = []
    for key, t in items:
        parts = key.split(".")
        if not t.is_floating_point() or not t.numel() or (weights_only and "optimizers" in parts):
            continue
        if t.element_size() == 1:  # float8: torch has no isfinite for it (a traceback); float32 holds its values
            t = t.float()
        if bool((~torch.isfinite(t) if "modules" in parts else torch.isnan(t)).any()):
            found.append(key)
    return found


def _note(base: Path, state: Any, weights_only: bool) -> str | None:
    agent = state.get("agent") if isinstance(state, dict) else None
    found = state if isinstance(state, list) else nonfinite_tensors(agent, weights_only=weights_only)
    if not found:
        return None
    more = f" (and {len(found) - 1} more tensor{'s' * (len(found) > 2)})" if len(found) > 1 else ""
    return (f"checkpoint {base} holds NaN or infinite values in '{found[0]}'{more}: saved from a run that diverged, "
            f"or damaged")


def warn_nonfinite(base: Path, state: Any, weights_only: bool = True) -> None:
    """Warn (a :class:`CanterWarning`) where checkpoint ``base``'s agent ``state`` (what ``load_checkpoint`` gave)
    holds non-finite values (see the module's docstring); it loads, to be inspected."""
    note = _note(base, state, weights_only)
    if note is not None:
        warn(CanterWarning(f"{note}; it is loaded to be inspected, its actions undefined, and training from it "
                           f"(--resume, init_from) is refused"))


def refuse_nonfinite(base: Path, state: Any, doing: str, weights_only: bool = False) -> None:
    """Refuse, in one line, to train (``doing``: what would, '--resume', 'init_from') from checkpoint ``base`` whose
    agent ``state`` holds non-finite values (``state``: what ``load_checkpoint`` gave, or the list of the tensors
    that :func:`nonfinite_in_file` found)."""
    note = _note(base, state, weights_only)
    if note is not None:
        raise CanterError(f"{note}; {doing} would train from them: start from an earlier checkpoint of the run (its "
                          f"best or a step-N) with init_from")
