"""``pettingzoo:tests.mixed_agents_warns``: :mod:`tests.mixed_agents` whose constructor warns (every time: Python
shows it once per place, by default)."""
from __future__ import annotations

import warnings

from tests.mixed_agents import MixedAgents


def parallel_env(**kwargs: object) -> MixedAgents:
    """PettingZoo's factory convention; warns ``mixed_agents_warns: made``."""
    warnings.warn("mixed_agents_warns: made", UserWarning)
    return MixedAgents(**kwargs)
