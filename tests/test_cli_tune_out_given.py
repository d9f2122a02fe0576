"""``canter eval|play|collect`` given a ``canter tune`` output folder (``runs/tune-ppo-CartPole-v1``) or its
``agents`` folder: the error said only "is not a canter run directory (no config.yaml or checkpoints/)", where the
agent to pass is right there (``OUT/agents/trial-N``, the one docs/tools.md says these commands take)."""
from __future__ import annotations

import pytest

from canter.checkpoint import find_checkpoint
from canter.errors import CanterError


def _tune_out(root):
    agents = root / "agents"
    agents.mkdir(parents=True)
    for suffix in (".safetensors", ".json"):
        (agents / f"trial-7{suffix}").write_bytes(b"")
    (root / "best.yaml").write_text("algo: ppo\n")
    return agents / "trial-7"


@pytest.mark.parametrize("given", ["out", "out/agents"])
def test_a_tune_output_names_its_best_agent(tmp_path, given):
    agent = _tune_out(tmp_path / "out")
    with pytest.raises(CanterError, match="is a canter tune output, not a run directory; pass the agent it kept: "
                                          f"'{agent}'"):
        find_checkpoint(tmp_path / given)


def test_a_folder_of_ones_own_is_still_not_a_run_directory(tmp_path):
    with pytest.raises(CanterError, match=r"is not a canter run directory \(no config.yaml or checkpoints/\)$"):
        find_checkpoint(tmp_path)


def test_a_study_under_way_with_several_agents_names_one_and_where_the_best_is_named(tmp_path):
    agent = _tune_out(tmp_path / "out")
    (agent.parent / "trial-12.safetensors").write_bytes(b"")
    with pytest.raises(CanterError, match=f"pass an agent it kept, e.g. '{agent.parent / 'trial-12'}' "
                                          r"\(best.yaml's header names the best\)"):
        find_checkpoint(tmp_path / "out")
