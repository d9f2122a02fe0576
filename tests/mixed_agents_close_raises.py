"""``pettingzoo:tests.mixed_agents_close_raises``: :mod:`tests.mixed_agents` whose ``close()`` raises (counted in
``CLOSED``, per process)."""
from __future__ import annotations

from tests.mixed_agents import MixedAgents

#: how many times a copy's close() was called in this process
CLOSED = [0]


class CloseRaises(MixedAgents):
    """Mixed agents whose ``close()`` raises."""

    def close(self) -> None:  # noqa: D102
        CLOSED[0] += 1
        raise RuntimeError("the simulator's licence server is gone")


def parallel_env(**kwargs: object) -> CloseRaises:
    """PettingZoo's factory convention."""
    return CloseRaises(**kwargs)
