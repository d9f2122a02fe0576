"""The ``device`` run option: ``cpu``, ``cuda``, ``cuda:N`` or ``auto``, resolved once when the config is built.

The resolved name (``auto`` becomes ``cuda`` or ``cpu``) is what ``config.yaml`` and every checkpoint record,
so a resumed run trains on the device it started on. Asking for a CUDA device that this machine or this
torch build lacks is a one-line :class:`~canter.errors.CanterError` (the CLI exits 2).
"""
from __future__ import annotations

import re

from canter.errors import CanterError, unknown

DEVICE_CHOICES = ("auto", "cpu", "cuda", "cuda:N")
_CUDA = re.compile(r"cuda(?::(\d+))?")


def cuda_available() -> bool:
    """Whether torch can use a CUDA GPU here (imports torch only when asked)."""
    import torch

    return bool(torch.cuda.is_available())


def resolve_device(spec: str, key: str = "device") -> str:
    """The torch device name for ``spec`` (``auto``: ``cuda`` when a CUDA GPU is usable, else ``cpu``).

    Raises a one-line :class:`CanterError` for a malformed name (suggesting the closest choice) and for a
    CUDA device this machine does not have (naming ``cpu`` and ``auto`` as the alternatives).
    """
    name = str(spec).strip().lower()
    if name == "auto":
        return "cuda" if cuda_available() else "cpu"
    if name == "cpu":
        return "cpu"
    match = _CUDA.fullmatch(name)
    if match is None:
        if name in ("gpu", "cuda:"):
            raise CanterError(f"unknown value for '{key}' '{spec}'; did you mean 'cuda'? (choices: "
                              f"{', '.join(DEVICE_CHOICES)})")
        raise unknown(f"value for '{key}'", str(spec), DEVICE_CHOICES)
    import torch

    if not torch.cuda.is_available():
        why = "this torch build has no CUDA support" if torch.version.cuda is None else "torch finds no CUDA GPU"
        raise CanterError(f"'{key}' is '{spec}' but {why} here; use {key}=cpu, or {key}=auto (cuda when "
                          f"available, else cpu)")
    count = torch.cuda.device_count()
    if match.group(1) is not None and int(match.group(1)) >= count:
        raise CanterError(f"'{key}' is '{spec}' but this machine has {count} CUDA device"
                          f"{'s' if count != 1 else ''} (cuda:0{f' to cuda:{count - 1}' if count > 1 else ''}); "
                          f"use one of them, {key}=cpu or {key}=auto")
    return name


def check_resume_device(recorded: str | None, run_dir: object) -> None:
    """A one-line :class:`CanterError` when the device a run trains on (``recorded``) is missing here: a resume
    continues on the run's own device, so that it equals an uninterrupted run."""
    try:
        resolve_device(recorded or "cpu")
    except CanterError:
        raise CanterError(f"cannot resume '{run_dir}' on this machine: it trains on '{recorded}', which torch does "
                          f"not find here (a resumed run continues on its own device, so that it equals an "
                          f"uninterrupted one); canter.load, canter eval and canter play take device=cpu") from None


def load_device(recorded: str | None, asked: str | None) -> str:
    """The device to load a checkpoint onto: ``asked`` when given (resolved as a run's), else the device it
    was trained on when that is usable here, else ``cpu`` (a CUDA-trained checkpoint on a CPU-only machine)."""
    if asked is not None:
        return resolve_device(asked)
    if not recorded or recorded == "cpu":
        return "cpu"
    try:
        return resolve_device(recorded)
    except CanterError:
        return "cpu"
