"""Fast learning tests for the off-policy family: each asserts a reward for a fixed seed.

The shipped Pendulum presets use rl-zoo3's settings (256-256 networks for SAC, 400-300 and
10k random warm-up steps for TD3/DDPG); here they run with 64-64 networks and (TD3/DDPG) 1k
warm-up steps so that each test takes seconds, and training stops as soon as a deterministic
evaluation reaches the bar.
"""
import pytest

import canter

FAST_PENDULUM = dict(net_arch=[64, 64], target_reward=-300, eval_every=1000, eval_episodes=10, max_steps=15_000)
WARM_UP = {"sac": 100, "td3": 1000, "ddpg": 1000}


def _train(algo: str, env: str, **kw) -> tuple[float, int]:
    trainer = canter.make_trainer(algo, env, **kw)
    for _ in trainer():
        pass
    trainer.close()
    return trainer.best_eval_return, trainer.step


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_reaches_minus_300_on_pendulum_within_15k_steps(algo):
    best, steps = _train(algo, "Pendulum-v1", seed=1, learning_starts=WARM_UP[algo], **FAST_PENDULUM)
    assert best >= -300, f"{algo} reached only {best:.1f} in {steps} steps"
    assert steps <= 15_000


def test_dqn_with_prioritized_replay_and_n_step_returns_solves_cartpole():
    best, steps = _train("dqn", "CartPole-v1", seed=1, prioritized=True, n_step=3, net_arch=[64, 64],
                         eval_every=2500, max_steps=50_000)
    assert best >= 475, f"DQN + PER + 3-step reached only {best} in {steps} steps"


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["sac", "td3", "ddpg"])
@pytest.mark.parametrize("seed", [2, 3])
def test_pendulum_other_seeds(algo, seed):
    best, _ = _train(algo, "Pendulum-v1", seed=seed, learning_starts=WARM_UP[algo], **FAST_PENDULUM)
    assert best >= -300


@pytest.mark.slow
def test_discrete_sac_learns_cartpole():
    # the preset's 50k-step budget: at 30k, seeds 1-4 measured 424, 476, 471, 476 (2026-11-22), so a
    # 30k budget tested the seed more than the algorithm; seed 1 reached 484 at 42.5k steps
    best, steps = _train("sac_discrete", "CartPole-v1", seed=1, max_steps=50_000, eval_every=2500,
                         target_reward=475, net_arch=[64, 64])
    assert best >= 475, f"discrete SAC reached only {best} in {steps} steps"


@pytest.mark.slow  # 10-20 s under load
@pytest.mark.parametrize("seed", [1, 2])
def test_rainbow_preset_learns_cartpole(seed):
    """rainbow's CartPole preset (Double, dueling, 3-step, prioritized, quantile head), stopped at 7,680 of its 50k
    steps. Random play scores ~22. Measured (2026-11-28, 10 evaluation episodes every 2,560 steps): seeds 1 / 2 / 3
    reached 338 / 257 / 319 at 2,560 steps and 338 / 318 / 328 at 5,120; with the whole budget seed 1 reached 493 at
    35k steps."""
    best, steps = _train("rainbow", "CartPole-v1", seed=seed, max_steps=7_680, eval_every=2560, eval_episodes=10,
                         target_reward=250)
    assert best >= 250, f"rainbow reached only {best} in {steps} steps"


@pytest.mark.slow  # 30-50 s under load
@pytest.mark.parametrize("seed", [0, 1])
def test_tqc_learns_pendulum(seed):
    """TQC with lr 1e-3 and [64, 64] networks (the preset's 256-unit ones are slower); random play averages about
    -1,200. Moved from test_reference_sb3_tqc.py (skipped without sb3-contrib, which this run does not use), where
    it asserted the one evaluation at 6,000 steps >= -400: seed 1 scored -536 there (-348 with evaluations every
    1,000 steps), a policy that had scored -127 at 4,000 steps. Measured every 1,000 steps (2026-11-28, 5 episodes):
    seeds 1 / 2 reached -127 / -156 at 4,000 steps and -125 / -130 at 5,000."""
    best, steps = _train("tqc", "Pendulum-v1", seed=seed, max_steps=6000, eval_every=1000, eval_episodes=5, lr=1e-3,
                         net_arch=[64, 64], learning_starts=1000, target_reward=-200)
    assert best >= -200, f"tqc reached only {best:.1f} in {steps} steps"
