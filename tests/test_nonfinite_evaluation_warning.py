"""A run whose evaluations return a NaN mean return (the env's rewards NaN in the evaluation episodes only, which
the divergence guard, watching training's, never sees; or any with ``divergence_guard: off``) finished with 'best
eval return n/a' and no word why: it is warned about once, naming the evaluation's step."""
from __future__ import annotations

import math
import warnings

import canter
import canter.trainers.base
from canter.errors import CanterWarning
from canter.trainers.evaluation import EvalResult


def test_nan_evaluations_are_warned_about_once(monkeypatch):
    monkeypatch.setattr(canter.trainers.base, "evaluate",
                        lambda *a, **k: EvalResult(float("nan"), float("nan"), [float("nan")], [5]))
    trainer = canter.make_trainer("ppo", "CartPole-v1", seed=0, max_steps=64, n_envs=2, n_steps=16, batch_size=16,
                                  n_epochs=1, eval_every=16, eval_episodes=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with trainer:
            records = [r for r in trainer() if r.evaluation is not None]
    said = [str(w.message) for w in caught if issubclass(w.category, CanterWarning) and "not finite" in str(w.message)]
    # at the user's line (the loop over trainer()), not canter/trainers/base.py (warnings.warn inside the trainer)
    assert [w.filename for w in caught if "not finite" in str(w.message)] == [__file__]
    assert len(records) >= 2 and all(math.isnan(r.evaluation.mean_return) for r in records)
    assert len(said) == 1, said
    assert f"the evaluation at step {records[0].step} returned a mean return of nan" in said[0], said[0]
    assert trainer.best_eval_return is None


def test_finite_evaluations_are_not_warned_about(monkeypatch):
    monkeypatch.setattr(canter.trainers.base, "evaluate", lambda *a, **k: EvalResult(1.0, 0.0, [1.0], [5]))
    trainer = canter.make_trainer("ppo", "CartPole-v1", seed=0, max_steps=32, n_envs=2, n_steps=16, batch_size=16,
                                  n_epochs=1, eval_every=16, eval_episodes=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with trainer:
            list(trainer())
    assert not [w for w in caught if "not finite" in str(w.message)]
    assert trainer.best_eval_return == 1.0

