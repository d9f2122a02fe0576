"""Agents: the bridge between numpy environments and torch algorithms."""
from canter.agents.agent import Agent, RunningMeanStd

__all__ = ["Agent", "RunningMeanStd"]
