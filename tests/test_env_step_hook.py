"""The ``on_env_step`` hook (Stable-Baselines3's ``_on_step``): called after every vector env step with an
:class:`~canter.callbacks.EnvStep`, in every trainer that steps envs; a reason it returns ends training at that
step, without the update of the iteration under way, which a continued or resumed run starts afresh."""
from __future__ import annotations

import json
import re
import textwrap

import numpy as np
import pytest
import torch

import canter
from canter.callbacks import Callback
from canter.errors import CanterError
from support import same_weights, stop_at_300

# 2 envs x 16 steps = 32 env steps per PPO iteration
PPO = dict(n_envs=2, n_steps=16, batch_size=32, n_epochs=1, eval_every=0, max_steps=256, tensorboard=False)
QUICK = {
    "ppo": PPO,
    "dqn": dict(n_envs=2, train_freq=16, learning_starts=0, gradient_steps=1, eval_every=0, max_steps=256,
                tensorboard=False),
    "acer": dict(n_envs=2, n_steps=16, eval_every=0, max_steps=256, tensorboard=False),
    "recurrent_ppo": dict(PPO),
}


class StepLog(Callback):
    """Keeps what every vector step showed the hook; stops at ``stop_at`` steps (None: never)."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.rows: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []
        self.stop_at = stop_at

    def on_env_step(self, trainer, step):  # noqa: D102
        self.rows.append((trainer.step, step.rewards.copy(), step.valid.copy(), step.terminated | step.truncated))
        return self.stop_at is not None and trainer.step >= self.stop_at


def _train(algo: str, *callbacks, hooks=None, **kw):
    trainer = canter.make_trainer(algo, "CartPole-v1", seed=0, callbacks=list(callbacks), hooks=hooks,
                                  **{**QUICK[algo], **kw})
    records = list(trainer())
    trainer.close()
    return trainer, records


@pytest.mark.parametrize("algo", ["ppo", "dqn", "acer", "recurrent_ppo"])
def test_the_hook_sees_every_env_step_and_the_rewards_of_the_logged_episodes(algo):
    log = StepLog()
    trainer, records = _train(algo, log)
    assert [s for s, *_ in log.rows] == list(range(2, 257, 2))  # every vector step of 2 envs, up to max_steps
    returns, ended = np.zeros(2), []
    for _, reward, valid, done in log.rows:
        returns += np.where(valid, reward, 0.0)
        ended += [returns[i] for i in np.flatnonzero(done)]
        returns[done] = 0.0
    logged = [e.episode_return for r in records for e in r.episodes]
    assert len(logged) == trainer.episode_count >= 4 and sorted(ended) == sorted(logged)


def test_a_reset_only_step_is_the_one_after_an_episode_end_and_has_no_reward():
    log = StepLog()
    _train("ppo", log)
    valid = np.array([v for _, _, v, _ in log.rows])
    done = np.array([d for *_, d in log.rows])
    assert (~valid).sum() >= 4
    np.testing.assert_array_equal(valid[1:], ~done[:-1])  # NEXT_STEP: the row after each end only resets
    assert all(r[~v].sum() == 0 and not d[~v].any() for _, r, v, d in log.rows)


@pytest.mark.parametrize("algo", ["ppo", "dqn", "acer", "recurrent_ppo"])
def test_a_stop_from_the_hook_ends_training_at_that_step_without_the_iteration_s_update(algo):
    _, records = _train(algo, hooks={"on_env_step": lambda t, step: "seen enough" if t.step >= 40 else None})
    assert [(r.step, r.stop_reason) for r in records if r.done] == [(40, "seen enough")]
    updates = _train(algo, max_steps=32)[0].algorithm.updates
    assert _train(algo, StepLog(stop_at=40))[0].algorithm.updates == updates  # the update at 48 or 64 is not taken


def test_the_stop_reason_is_recorded_in_summary_json_and_true_is_named_by_the_callback(tmp_path):
    canter.train("ppo", "CartPole-v1", seed=0, run_dir=tmp_path / "run", callbacks=[StepLog(stop_at=40)], **PPO)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (summary["steps"], summary["stop_reason"]) == (40, "step_log")


def test_true_at_the_first_step_as_sb3s_go_on_is_warned_about():
    """An SB3 port's on_env_step returning True (its _on_step's 'go on') stopped the run at step 2 without a word."""
    with pytest.warns(canter.CanterWarning, match="returned True at the first env step, which stops training"):
        trainer, _ = _train("ppo", hooks={"on_env_step": lambda trainer, step: True})
    assert trainer.step == 2
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", canter.CanterWarning)
        trainer, _ = _train("ppo", StepLog(stop_at=40))  # True later: a stop meant
    assert trainer.step == 40


def test_a_run_with_the_hook_resumes_exactly(tmp_path):
    """A first Ctrl-C (here an after_update hook asks for it) between iterations, then a resume: as the
    uninterrupted run, the on_env_step hook seeing the same steps."""
    parts, first, more = StepLog(), StepLog(), {**PPO, "max_steps": 416}
    canter.train("ppo", "CartPole-v1", seed=0, run_dir=tmp_path / "parts", callbacks=[parts],
                 hooks={"after_update": stop_at_300}, **more)
    assert json.loads((tmp_path / "parts" / "summary.json").read_text())["steps"] == 320
    canter.resume(tmp_path / "parts", callbacks=[parts], quiet=True)
    canter.train("ppo", "CartPole-v1", seed=0, run_dir=tmp_path / "first", callbacks=[first], **more)
    assert [s for s, *_ in parts.rows] == [s for s, *_ in first.rows]
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(parts.rows, first.rows))
    assert same_weights(canter.load(tmp_path / "parts"), canter.load(tmp_path / "first"))


def test_a_run_stopped_mid_rollout_resumes_as_it_continues(tmp_path):
    """The rollout under way at the stop is dropped: a run continued in Python and one resumed from the stop's
    checkpoint (a hook's 'interrupted' stop is a Ctrl-C's, which resumes) both start a new one where the env is."""
    armed = [True]

    def stop(trainer, step):
        return "interrupted" if armed[0] and trainer.step >= 40 else None

    canter.train("ppo", "CartPole-v1", seed=0, run_dir=tmp_path / "run", hooks={"on_env_step": stop}, **PPO)
    armed[0] = False
    resumed = canter.resume(tmp_path / "run", max_steps=136, quiet=True)
    armed[0] = True
    trainer = canter.make_trainer("ppo", "CartPole-v1", seed=0, hooks={"on_env_step": stop}, **PPO)
    assert [r.step for r in trainer()][-1] == 40
    armed[0] = False
    trainer.run.max_steps = 136
    assert [r.step for r in trainer()][-1] == 136
    trainer.close()
    assert same_weights(resumed, trainer.agent)


def test_a_multi_policy_run_calls_the_hook_with_each_policy_s_rows():
    pytest.importorskip("pettingzoo")
    seen = []

    def hook(trainer, step):
        seen.append({p: len(r) for p, r in step.rewards.items()})
        return "enough" if len(seen) == 20 else None

    trainer = canter.make_trainer("ppo", "pettingzoo:tests.mixed_agents", policies="type", seed=0, n_envs=2,
                                  n_steps=16, eval_every=0, max_steps=2000, tensorboard=False,
                                  hooks={"on_env_step": hook})
    records = list(trainer())
    trainer.close()
    assert len(seen) == 20 and set(seen[0]) == set(trainer.members) and sum(seen[0].values()) == trainer.env.num_envs
    assert (records[-1].step, records[-1].stop_reason) == (20 * trainer.env.num_envs, "enough")


def test_a_turn_based_game_calls_the_hook_at_every_move():
    pytest.importorskip("pettingzoo")
    log = StepLog()
    trainer = canter.make_trainer("ppo", "pettingzoo:pettingzoo.classic.tictactoe_v3", seed=0, callbacks=[log],
                                  n_envs=2, n_steps=32, batch_size=32, n_epochs=1, max_steps=64, eval_every=0,
                                  tensorboard=False)
    list(trainer())
    trainer.close()
    assert [s for s, *_ in log.rows] == list(range(2, 65, 2))


def test_the_hook_named_in_yaml_and_its_stop(tmp_path, monkeypatch):
    (tmp_path / "my_step_hooks.py").write_text(textwrap.dedent("""
        def stop_at_50(trainer, step):
            return trainer.step >= 50
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "run.yaml").write_text("hooks: {on_env_step: 'my_step_hooks:stop_at_50'}\n")
    trainer = canter.make_trainer("ppo", "CartPole-v1", config_file=tmp_path / "run.yaml", **PPO)
    records = list(trainer())
    trainer.close()
    assert (records[-1].step, records[-1].stop_reason) == (50, "stop_at_50")


def test_a_hook_without_its_step_argument_is_one_line():
    with pytest.raises(CanterError, match=re.escape("cannot be called as on_env_step(trainer, step)")):
        canter.make_trainer("ppo", "CartPole-v1", hooks={"on_env_step": lambda trainer: None}, max_steps=64)
    # (its YAML form: test_hook_signatures.py's wrong-arity test)


def test_trainers_whose_env_steps_happen_elsewhere_refuse_the_hook(tmp_path):
    from canter.data.dataset import collect

    hooks = {"on_env_step": lambda trainer, step: None}
    with pytest.raises(CanterError, match=r"^on_env_step hooks are not called here: a learner/explorer run"):
        canter.make_trainer("impala", "CartPole-v1", hooks=hooks, max_steps=64)
    path = str(collect("CartPole-v1", 100, None, seed=0).save(tmp_path / "data"))
    with pytest.raises(CanterError, match=r"^on_env_step hooks are not called here: an offline run steps no env"):
        canter.make_trainer("bc", None, dataset=path, hooks=hooks, max_steps=10)


def test_a_value_counted_at_each_env_step_is_logged_from_after_update():
    """The pattern the docs show: accumulate in on_env_step, add to losses in after_update."""
    class ValidRows(Callback):
        def __init__(self) -> None:
            self.rows = 0

        def on_env_step(self, trainer, step):  # noqa: D102
            self.rows += int(step.valid.sum())

        def after_update(self, trainer, losses):  # noqa: D102
            losses["custom/valid_rows"], self.rows = self.rows, 0

    log = StepLog()
    _, records = _train("ppo", ValidRows(), log, max_steps=96)
    per_iteration = [sum(int(v.sum()) for s, _, v, _ in log.rows if end - 32 < s <= end) for end in (32, 64, 96)]
    assert [r.losses["custom/valid_rows"] for r in records] == per_iteration
    assert sum(per_iteration) < 96  # some rows only reset their env


def test_acer_s_stop_mid_segment_leaves_the_stored_segment_it_was_overwriting():
    """One segment's ring (buffer_size 32 = 16 steps x 2 envs): the dropped segment was written over the stored
    one, which is put back."""
    kept = {}

    def keep(trainer, losses):  # after the first segment only (after_update follows the stopped iteration too)
        if not kept:
            kept.update({k: getattr(trainer.replay, k)[0].clone() for k in trainer.replay.ARRAYS})

    trainer, records = _train("acer", StepLog(stop_at=40), hooks={"after_update": keep}, buffer_size=32,
                              replay_start=32)
    assert (records[-1].step, trainer.replay.size, trainer.replay.pos) == (40, 1, 0)
    assert all(torch.equal(getattr(trainer.replay, k)[0], v) for k, v in kept.items())
