"""What a run's checkpoints and config say of it: the agent's metadata (:func:`run_metadata`,
:func:`agent_metadata`) and the provenance line heading ``config.yaml`` (:func:`provenance_comment`)."""
from __future__ import annotations

from typing import Any

from canter.envs.spaces import space_to_dict
from canter.registry import user_modules
from canter.trainers.base import Trainer
from canter.utils import canter_version, git_commit, git_dirty, provenance


def run_metadata(trainer: Trainer, config: dict[str, Any]) -> dict[str, Any]:
    """What a checkpoint's JSON says of the trainer's agent: algorithm, env, step, spaces, the
    resolved ``config``, canter's version, git commit and dirty flag (None: unknown), and the trainer's counters."""
    return {**agent_metadata(trainer.agent, config, trainer.step), "trainer": trainer.state()}


def agent_metadata(agent: Any, config: dict[str, Any], step: int = 0) -> dict[str, Any]:
    """What a checkpoint's JSON says of ``agent`` at ``step`` (:func:`run_metadata` less the trainer's counters):
    algorithm, env, spaces, canter's provenance, the resolved ``config`` and the modules that registered its parts.
    ``agent.save`` of an agent that ``canter.make_agent`` built, which no trainer trained, writes it at step 0."""
    return {
        "algorithm": config["algo"], "env": config["env"], "step": step,
        "observation_space": space_to_dict(agent.observation_space),
        "action_space": space_to_dict(agent.action_space),
        **provenance(), "config": config, "user_modules": user_modules(config),
    }


def provenance_comment() -> str:
    """A YAML comment line naming canter's version, git commit and whether its checkout had uncommitted
    changes ("unknown" for either outside a checkout or without git), which heads a run's ``config.yaml``."""
    commit, dirty = git_commit() or "unknown", git_dirty()
    changes = "unknown" if dirty is None else ("yes" if dirty else "no")
    return f"# written by canter {canter_version()}, git commit {commit}, uncommitted changes: {changes}\n"
