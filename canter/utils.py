"""Small helpers: seeding, git commit, versions."""
from __future__ import annotations

import functools
import random
import subprocess
from pathlib import Path

import numpy as np
import torch


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


@functools.lru_cache(maxsize=4)
def git_commit(path: str | None = None) -> str | None:
    """Short (8-char) commit sha of the checkout holding ``path`` (default: canter's source, else the cwd)."""
    places = [path] if path else [str(Path(__file__).resolve().parent), str(Path.cwd())]
    for where in places:
        try:
            out = subprocess.run(
                ["git", "-C", where, "rev-parse", "--short=8", "HEAD"], capture_output=True, text=True, timeout=5
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        sha = out.stdout.strip()
        if out.returncode == 0 and sha:
            return sha
    return None


def canter_version() -> str:
    """Installed canter version."""
    from canter import __version__

    return __version__
