"""A multi-policy run (policies: agent) whose checkpoint reads its policies' image observations as canter did
before 2026-11-27 (``[8, 8, 6]`` as a vector): resume and init_from refuse it in one line, as they do a run of one
policy, where resume was a state_dict RuntimeError traceback."""
from __future__ import annotations

import pytest

import canter
from canter.errors import CanterError
from canter.models import image_layout

pytest.importorskip("pettingzoo")

ENV = "pettingzoo:tests.match_image6"


@pytest.fixture
def old_run(tmp_path, monkeypatch):
    """A multi-policy run trained as canter read images until 2026-11-27 (its checkpoint says nothing of it)."""
    with monkeypatch.context() as patch:
        patch.setattr(image_layout, "_shape_layout", image_layout.former_image_layout)
        canter.train("ppo", ENV, policies="agent", n_steps=16, n_envs=1, max_steps=16, eval_episodes=1,
                     run_dir=tmp_path / "old")
    return tmp_path / "old"


def test_resume_of_a_multi_policy_run_read_as_before_is_one_line(old_run):
    assert canter.load(old_run).predict  # still loads (each policy keeps its reading)
    with pytest.raises(CanterError, match=r"cannot resume: policy 'agent_0'.* as a vector"):
        canter.resume(old_run, max_steps=64)


def test_init_from_a_multi_policy_run_read_as_before_is_one_line(old_run, tmp_path):
    with pytest.raises(CanterError, match="init_from .* as canter did before 2026-11-27"):
        canter.train("ppo", ENV, policies="agent", n_steps=16, n_envs=1, max_steps=16, init_from=str(old_run),
                     run_dir=tmp_path / "new")
