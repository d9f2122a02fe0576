"""A policy's learning_starts warning in a multi-policy run: it gave the policy's share of max_steps rounded up to its
member trainer's whole steps ('learning_starts (40) >= max_steps (34)' for 1/3 of 100 steps, 33.33), which read as
if the run's max_steps were 34; it now gives the exact share and what it is a share of."""
from __future__ import annotations

import warnings

import canter
from support import MIXED


def _said(**settings) -> list[str]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        canter.make_trainer("dqn", MIXED, policies="type", n_envs=1, max_steps=100, eval_episodes=0,
                            **settings).close()
    return [str(w.message) for w in seen if "learning_starts" in str(w.message)]


def test_the_share_of_max_steps_is_exact():
    said = _said(learning_starts=40)  # the speaker: 1 of 3 agent rows; the listeners (2 of 3: 66.67 steps) learn
    assert said == ["policy 'speaker' (1 of the 3 agent rows of all env copies, so 1/3 of the run's 100 steps): "
                    "learning_starts (40) >= its share of max_steps (1/3 of 100: 33.33 steps): the run only collects "
                    "random actions and never learns"]
    said = _said(learning_starts=70)
    assert any("policy 'listener' (2 of the 3 agent rows" in m and "learning_starts (70) >= its share of max_steps "
               "(2/3 of 100: 66.67 steps)" in m for m in said), said
