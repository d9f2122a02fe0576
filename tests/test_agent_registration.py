"""The registered agent 'agent' is the Agent class (``--set agent=agent``, recurrent_ppo's check of a given agent):
a helper function placed between ``@register("agent", "agent")`` and ``class Agent`` took the registration, so
``--set agent=agent`` ended in a TypeError traceback and builtins.json named the helper."""
from __future__ import annotations

import json
from pathlib import Path

import canter
from canter.agents.agent import Agent
from canter.registry import lookup


def test_the_agent_named_agent_is_the_agent_class():
    assert lookup("agent", "agent") is Agent


def test_builtins_json_names_the_agent_class():
    components = json.loads((Path(canter.__file__).parent / "builtins.json").read_text())["components"]
    assert components["agent"]["agent"] == "canter.agents.agent:Agent"
