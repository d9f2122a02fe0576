"""Refuse a model too big for the machine before any of its memory is allocated.

A model whose weights run to tens of gigabytes (``net_arch=[1000000000]``) was allocated for real: torch
reserved the memory lazily, filled it in (orthogonal init of a billion-row matrix) for minutes, and only failed
(if it did) once a later tensor could not be had. :func:`check_model_fits` builds the model on torch's ``meta``
device first, which allocates nothing and takes well under a second, counts its bytes, and raises a one-line
:class:`~canter.errors.CanterError` when the weights and their gradients cannot fit in the device's memory.
"""

from __future__ import annotations

import os
from typing import Any

import torch

from canter.errors import CanterError


def device_memory_bytes(device: torch.device) -> int | None:
    """Total memory of ``device`` in bytes (a GPU's memory, or the machine's RAM capped by a cgroup limit),
    or ``None`` where it cannot be told."""
    if device.type == "cuda":
        try:
            return int(torch.cuda.get_device_properties(device).total_memory)
        except Exception:  # noqa: BLE001  (no answer: no check)
            return None
    if device.type != "cpu":
        return None
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(limit_file, encoding="ascii") as f:
                text = f.read().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def model_bytes_on_meta(build: Any) -> int | None:
    """Bytes of the parameters and buffers of the module ``build()`` makes, built on the ``meta`` device
    (nothing is allocated, no random numbers are drawn); ``None`` where the model cannot be built there."""
    try:
        with torch.device("meta"):
            model = build()
        tensors = [*model.parameters(), *model.buffers()]
        return sum(t.numel() * t.element_size() for t in tensors)
    except Exception:  # noqa: BLE001  (a model that cannot be built on meta is built for real, unchecked)
        return None


def check_model_fits(build: Any, device: torch.device, what: str, sizes: str) -> None:
    """Raise a one-line :class:`CanterError` when the model ``build()`` makes cannot train on ``device``: its
    weights plus their gradients (the least any training holds) exceed the device's total memory.

    ``what`` names the model in the message ("model ActorCritic for ppo"), ``sizes`` the hyperparameters that
    set its sizes."""
    total = device_memory_bytes(device)
    if total is None:
        return
    weights = model_bytes_on_meta(build)
    if weights is None or 2 * weights <= total:
        return
    raise CanterError(f"cannot build {what}: its weights need {weights / 2**30:,.1f} GiB (and as much again for "
                      f"their gradients), more memory than there is (the {device.type} has {total / 2**30:,.1f} GiB); "
                      f"check the sizes in its hyperparameters ({sizes})")
