"""The shared trainer loop: evaluations, stop conditions, learning-rate control, the guard's restores,
and what the loggers keep across a resume."""
from __future__ import annotations

import copy
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.envs.vector import VecEnv
from canter.optim import FlatAdam
from canter.schedules import lr_decay
from canter.trainers.evaluation import evaluate
from support import scripted

# 2 envs x 16 steps = 32 env steps per PPO iteration
TINY = dict(n_envs=2, n_steps=16, batch_size=32, n_epochs=1, eval_episodes=1, tensorboard=False)
DQN = dict(n_envs=2, learning_starts=64, train_freq=8, gradient_steps=1, net_arch=[32], buffer_size=2000,
           target_update_interval=1000, eval_episodes=1, tensorboard=False)


# -- evaluations and the best return --------------------------------------------------------------


def test_a_non_finite_evaluation_does_not_become_the_best_for_ever():
    trainer = canter.make_trainer("ppo", "CartPole-v1", eval_every=32, max_steps=4 * 32, **TINY)
    scripted(trainer, [float("nan"), 1.0, 2.0, 1.5])
    records = list(trainer())
    trainer.close()
    assert [r.new_best for r in records] == [False, True, True, False]
    assert trainer.best_eval_return == 2.0 and records[-1].best_eval_return == 2.0


@pytest.mark.parametrize("stop", ["max_seconds", "callback"])
def test_a_run_that_ends_between_evaluations_evaluates_its_final_policy(stop):
    # eval_every 0 means "only at the end": a run ended by the clock or a callback is at its end too
    kw = dict(max_seconds=1e-9) if stop == "max_seconds" else dict(hooks={"should_stop": lambda t: t.step >= 64})
    trainer = canter.make_trainer("ppo", "CartPole-v1", eval_every=0, max_steps=6400, **TINY, **kw)
    records = list(trainer())
    trainer.close()
    assert records[-1].done and records[-1].step < 6400
    assert records[-1].evaluation is not None and records[-1].new_best
    assert trainer.last_eval is records[-1].evaluation and trainer.evaluations == 1


def test_ctrl_c_between_evaluations_stops_without_an_evaluation():
    def interrupt(trainer, losses):
        if trainer.step >= 64:
            trainer.stop_requested = "interrupted"

    trainer = canter.make_trainer("ppo", "CartPole-v1", eval_every=1000, max_steps=6400,
                                  hooks={"after_update": interrupt}, **TINY)
    records = list(trainer())
    trainer.close()
    assert records[-1].stop_reason == "interrupted" and records[-1].step == 64
    assert records[-1].evaluation is None and trainer.evaluations == 0


# -- learning-rate control ----------------------------------------------------------------------------


def test_min_lr_never_raises_a_rate_nothing_lowered():
    trainer = canter.make_trainer("dqn", "CartPole-v1", min_lr=1e-3, lr=1e-4, eval_every=0, max_steps=4 * 32,
                                  **{**DQN, "learning_starts": 0})
    list(trainer())
    trainer.close()
    assert trainer.algorithm.optimizers()["optimizer"].param_groups[0]["lr"] == pytest.approx(1e-4)


def test_min_lr_bounds_the_run_s_reductions_not_the_algorithm_s_own_schedule():
    seen: list[tuple[int, float]] = []
    trainer = canter.make_trainer(
        "ppo", "CartPole-v1", lr=1e-3, lr_schedule="linear", min_lr=5e-4, eval_every=0, max_steps=640,
        hooks={"after_update": lambda t, l: seen.append((t.step, l["learning_rate"]))}, **TINY,
    )
    list(trainer())
    trainer.close()
    assert min(lr for _, lr in seen) < 5e-4
    for step, lr in seen:  # the same rates as without min_lr: nothing of the run's lowered them
        assert lr == pytest.approx(1e-3 * (1 - step / 640), rel=1e-9, abs=1e-15), (step, lr)


def test_a_divergence_restore_does_not_apply_the_lr_decay_twice():
    poisoned = {"done": False}

    def poison_once(trainer):
        if not poisoned["done"] and trainer.step >= 512:
            poisoned["done"] = True
            with torch.no_grad():  # a NaN target network: the next TD loss and its gradients are NaN
                next(trainer.algorithm.q_target.parameters()).fill_(float("nan"))

    seen: list[tuple[int, float]] = []
    trainer = canter.make_trainer(
        "dqn", "CartPole-v1", divergence_guard="restore", lr=1e-3, lr_decay="linear", lr_decay_final=0.1,
        max_steps=1280, eval_every=256,
        hooks={"before_collect": poison_once,
               "after_update": lambda t, l: seen.append((t.step, t.lr.current()["optimizer.0"]))}, **DQN,
    )
    list(trainer())
    trainer.close()
    (event,) = trainer.guard.events
    assert "restored" in event["action"]
    for step, lr in seen:
        # the rate follows decay(step) x 0.5 after the restore; set_progress ran at the iteration's last
        # step once learning started (after step 64), before its last vector step until then
        progress_step = step if step > 64 else step - 2
        expected = 1e-3 * lr_decay("linear", progress_step, 1280, final=0.1) * (0.5 if step >= event["step"] else 1.0)
        assert lr == pytest.approx(expected, rel=1e-9), (step, lr, expected)


# -- TensorBoard across checkpoints and resumes ---------------------------------------------------------


def _scalar_steps(run_dir, tag: str) -> list[int]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    return [e.step for e in acc.Scalars(tag)]


def test_tensorboard_keeps_the_checkpoint_step_s_events_across_a_resume(tmp_path):
    pytest.importorskip("tensorboard")
    run_dir = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, max_steps=256, n_envs=2, n_steps=64, eval_episodes=1,
                 eval_every=128, seed=0)
    canter.resume(run_dir, max_steps=512)  # continues from 'last', saved at step 256 after its record was logged
    assert _scalar_steps(run_dir, "eval/mean_return") == [128, 256, 384, 512]
    sps = _scalar_steps(run_dir, "charts/steps_per_second")
    assert 256 in sps and sps == sorted(set(sps))


def test_tensorboard_events_are_on_disk_when_a_resumable_checkpoint_is(tmp_path):
    pytest.importorskip("tensorboard")
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=tmp_path / "run", max_steps=1024, n_envs=2, n_steps=64,
                              eval_episodes=1, eval_every=128, checkpoint_every=256)
    records = run()
    for record in records:
        if record.step >= 256:
            break
    # 'last' now holds step 256: a kill -9 here must not lose the events logged up to it, which a
    # resumed run does not log again
    assert _scalar_steps(tmp_path / "run", "eval/mean_return") == [128, 256]
    records.close()
    run.close()


# -- FlatAdam against torch.optim.Adam over many steps ---------------------------------------------------


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("weight_decay", [0.0, 1e-2])
@pytest.mark.parametrize("max_norm", [None, 1.0])
def test_flat_adam_follows_torch_adam_over_many_steps(fused, weight_decay, max_norm):
    """Random gradients (some large, some exactly zero), a learning-rate change and a state_dict round trip
    into a fresh optimizer half way: the same parameters as torch.optim.Adam and clip_grad_norm_."""
    torch.manual_seed(0)
    shapes = [(5, 3), (3,), (7,), (2, 2)]
    params = [torch.nn.Parameter(torch.randn(s)) for s in shapes]
    ref = [torch.nn.Parameter(p.detach().clone()) for p in params]
    kw = dict(lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=weight_decay)
    flat = FlatAdam(params, **kw)
    flat._fused = fused and flat._fused
    torch_opt = torch.optim.Adam(ref, **kw, foreach=False)
    for t in range(300):
        if t == 100:
            flat.param_groups[0]["lr"] = torch_opt.param_groups[0]["lr"] = 3e-3
        if t == 150:  # resume: a new optimizer over new parameters, loaded from copies of the state
            state = copy.deepcopy(flat.state_dict())
            values = [p.detach().clone() for p in params]
            params = [torch.nn.Parameter(v) for v in values]
            flat = FlatAdam(params, lr=0.5)
            flat._fused = fused and flat._fused
            flat.load_state_dict(state)
        grads = [torch.randn(s) * (30.0 if t % 7 == 0 else 1.0) for s in shapes]
        if t % 11 == 0:
            grads[1].zero_()
        if t % 13 == 0:
            grads = [torch.zeros(s) for s in shapes]
        flat.zero_grad()
        for p, r, g in zip(params, ref, grads):
            p.grad.copy_(g)
            r.grad = g.clone()
        if max_norm is not None:
            flat.clip_grad_norm_(max_norm)
            torch.nn.utils.clip_grad_norm_(ref, max_norm)
        flat.step()
        torch_opt.step()
    for p, r in zip(params, ref):
        torch.testing.assert_close(p, r, rtol=1e-5, atol=1e-6)
    assert float(flat.step_count) == 300 and flat.param_groups[0]["lr"] == 3e-3
    assert not math.isnan(float(flat.exp_avg_sq.sum()))


# -- evaluation ------------------------------------------------------------------------------------
class _Fixed(gym.Env):
    """Episodes of ``length`` steps earning ``reward`` each."""

    observation_space = gym.spaces.Box(-1, 1, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, length, reward=1.0):
        self.length, self.reward, self.t = length, reward, 0

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(1, np.float32), self.reward, self.t >= self.length, False, {}


class _Zeros:
    """A policy that always picks action 0."""

    def predict(self, obs):
        return np.zeros(len(obs), np.int64)


def _fixed_envs(*envs):
    return VecEnv(gym.vector.SyncVectorEnv(list(envs), autoreset_mode=gym.vector.AutoresetMode.NEXT_STEP))


def test_evaluate_runs_exactly_n_episodes_spread_evenly_over_the_sub_envs():
    """Sub-env 0's episodes last 2 steps, sub-env 1's 5 (reward 1 a step): 3 episodes on 2 envs are one
    of sub-env 0 and two of sub-env 1, although sub-env 0 finishes four more while it waits."""
    env = _fixed_envs(lambda: _Fixed(2), lambda: _Fixed(5))
    result = evaluate(_Zeros(), env, 3, seed=0)
    env.close()
    assert sorted(result.returns) == [2.0, 5.0, 5.0] and sorted(result.lengths) == [2, 5, 5]
    assert result.mean_return == pytest.approx(4.0) and result.episodes == 3


def test_episode_returns_add_the_envs_own_rewards_not_their_float32_roundings():
    """Rewards were cast to float32 before they were added up: ten rewards of 0.1 made a return of
    1.0000000149011612 (Pendulum: -1137.0425159931 for a raw -1137.0425133960) in the evaluation and in
    history.parquet, where SB3's Monitor adds the env's floats (0.9999999999999999, logged rounded: 1.0)."""
    env = _fixed_envs(lambda: _Fixed(10, 0.1))
    result = evaluate(_Zeros(), env, 1, seed=0)
    step = env.step(np.zeros(1, np.int64))
    env.close()
    assert result.returns == [sum([0.1] * 10)]
    assert step.reward.dtype == np.float32  # what the buffers and losses get is unchanged


def test_deterministic_prediction_leaves_the_observation_statistics_alone():
    trainer = canter.make_trainer("ppo", "CartPole-v1", normalize_obs=True, max_steps=64, **TINY)
    list(trainer())
    trainer.close()
    agent = trainer.agent
    before = {k: np.array(v, copy=True) for k, v in agent.obs_rms.state_dict().items()}
    actions = agent.predict(np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32) * 50)
    assert actions.shape == (8,)
    for k, v in agent.obs_rms.state_dict().items():
        np.testing.assert_array_equal(v, before[k])


# -- periodic checkpoints and log_every ---------------------------------------------------------------


def test_log_every_does_not_thin_the_periodic_checkpoints(tmp_path):
    """``log_every`` is a logging setting: with it at 4, the checkpoints of ``checkpoint_every: 64`` (32 env steps an
    iteration) were saved only at the logged records (step-128, step-256), and step-64, step-192 never were, nor
    were their ``on_checkpoint`` hooks called."""
    saved = []
    canter.train("ppo", "CartPole-v1", run_dir=tmp_path / "run", max_steps=256, eval_every=0, checkpoint_every=64,
                 log_every=4, hooks={"on_checkpoint": lambda trainer, path: saved.append(path.name)}, **TINY)
    assert sorted(p.name for p in (tmp_path / "run" / "checkpoints").glob("step-*.json")) == \
        [f"step-{s:09d}.json" for s in (64, 128, 192, 256)]
    assert [n for n in saved if n.startswith("step-")] == [f"step-{s:09d}" for s in (64, 128, 192, 256)]


# -- what an algorithm's learn() reports ---------------------------------------------------------------


@pytest.mark.parametrize("reported, outcome", [(0.5, "logged"), (float("nan"), "diverged"), ([0.5], "refused")])
def test_a_tensor_reported_by_learn_is_logged_as_its_number(tmp_path, reported, outcome):
    """A registered algorithm whose ``learn`` reports ``{"custom": torch.tensor(x)}`` (not ``.item()``) ended its run in
    pyarrow's ArrowInvalid traceback writing updates.parquet (summary.json ``stop_reason: interrupted``), and a NaN in
    such a tensor passed the divergence guard, which checks floats. A 0-d tensor is now its number; a tensor of shape
    (1,) is refused in one line, as from an ``after_update`` hook."""
    import pyarrow.parquet as pq

    from canter.algorithms.ppo import PPO
    from canter.registry import _REGISTRY, register
    from canter.trainers.guard import TrainingDiverged

    @register("algorithm", "test_only_tensor_ppo")
    class TensorPPO(PPO):
        """PPO whose learn reports one statistic as a tensor."""

        def learn(self, *args, **kwargs):  # noqa: D102
            return {**super().learn(*args, **kwargs), "custom": torch.tensor(reported)}

    try:
        if outcome == "logged":
            canter.train("test_only_tensor_ppo", "CartPole-v1", run_dir=tmp_path / "run", max_steps=64, **TINY)
            assert pq.read_table(tmp_path / "run" / "updates.parquet").column("custom").to_pylist() == [0.5, 0.5]
            return
        error = TrainingDiverged if outcome == "diverged" else canter.CanterError
        with pytest.raises(error, match="custom") as exc:
            canter.train("test_only_tensor_ppo", "CartPole-v1", max_steps=64, **TINY)
        assert "\n" not in str(exc.value)
    finally:  # other tests go over every registered algorithm
        _REGISTRY["algorithm"].pop("test_only_tensor_ppo", None)
