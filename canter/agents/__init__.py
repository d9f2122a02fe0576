"""Agents: the bridge between numpy environments and torch algorithms."""
from canter.agents.agent import Agent, RunningMeanStd
from canter.agents import recurrent  # noqa: F401,E402  (registers recurrent_agent)

__all__ = ["Agent", "RunningMeanStd"]
