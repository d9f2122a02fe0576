"""A frozen policy (``policy_hparams.<policy>.frozen: true``) never updates: training hyperparameters given for it
(``lr``, ``n_steps``, ...) are warned about once, in one line naming the policy and the keys."""
from __future__ import annotations

import warnings

import pytest

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.errors import CanterWarning  # noqa: E402
from support import HPARAMS, MIXED  # noqa: E402

SHORT = dict(env=MIXED, policies="type", seed=3, target_reward=None, **{**HPARAMS["ppo"], "n_envs": 2,
                                                                        "eval_every": 256})


def _frozen_warnings(tmp_path, own: dict) -> list[str]:
    canter.train("ppo", run_dir=tmp_path / "first", max_steps=300, **SHORT)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        canter.make_trainer("ppo", max_steps=300, init_from=str(tmp_path / "first"), run_dir=tmp_path / "second",
                            policy_hparams={"listener": {"frozen": True, **own}}, **SHORT).close()
    return [str(w.message) for w in caught if issubclass(w.category, CanterWarning) and "frozen" in str(w.message)]


def test_a_frozen_policys_training_hparams_are_warned_about_once(tmp_path):
    lines = _frozen_warnings(tmp_path, {"lr": 0.5, "n_steps": 32, "net_arch": [64, 64]})
    assert lines == ["policy 'listener' is frozen (frozen: true) and never trained: its policy_hparams lr, n_steps "
                     "are ignored"]


def test_a_frozen_policy_shaped_only_is_not_warned_about(tmp_path):
    assert _frozen_warnings(tmp_path, {"net_arch": [64, 64]}) == []
