"""A multi-policy run's budget warnings: a policy's rollout or training phase is compared with its share of
``max_steps`` as the run rounds it (whole vector steps of every agent row)."""
from __future__ import annotations

import warnings

import pytest

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from support import ENV  # noqa: E402


def _budget_warnings(algo: str, **settings) -> tuple[list[str], list[int]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = canter.make_trainer(algo, ENV, env_kwargs={"n_agents": 3}, policies="agent", n_envs=1,
                                      max_steps=100, eval_episodes=0, **settings)
    with trainer:
        steps = [record.step for record in trainer()]
    return [str(w.message) for w in caught if "is less than one" in str(w.message)], steps


@pytest.mark.parametrize("algo, cycle", [("ppo", "n_steps"), ("dqn", "train_freq")])
def test_a_policys_cycle_over_its_share_of_an_uneven_budget_is_warned_about(algo, cycle):
    """3 policies of one agent row each, max_steps 100: each policy's share was rounded up to 34, so a rollout
    (n_steps 34) or phase (train_freq 34) of 34 steps 'fitted' and nothing was said, though the run took 102 steps
    (every row steps together), more than max_steps, as a shared policy's run is warned about. The share is now
    rounded down (33), as the run takes whole vector steps; the 33 the warning suggests then fits."""
    extra = {"batch_size": 32} if algo == "ppo" else {"learning_starts": 0}
    said, steps = _budget_warnings(algo, **{cycle: 34}, **extra)
    assert steps == [102]
    assert len(said) == 3, said
    assert all(f"--set {cycle}=33 makes one fit" in m and m.endswith("the run at least 102") for m in said), said
    said, steps = _budget_warnings(algo, **{cycle: 33}, **extra)
    assert said == [] and steps[0] == 99


@pytest.mark.parametrize("algo, settings, what", [
    ("dqn", {"train_freq": 50, "learning_starts": 0}, "training phase (train_freq 50 on 1 env = 50 steps"),
    ("ppo", {"n_steps": 50, "batch_size": 25}, "rollout (n_steps 50 x 1 agent row (1 env copy x 1 agent) = 50 steps"),
])
def test_a_policys_cycle_warning_gives_its_exact_share_of_max_steps(algo, settings, what):
    """A policy's rollout or training phase warning read 'max_steps (33) is less than one ...' for a run of max_steps
    100 (the policy's share rounded down, as if it were the run's budget); it gives the exact share and what it is a
    share of, as the learning_starts warning does."""
    from support import MIXED

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        canter.make_trainer(algo, MIXED, policies="type", n_envs=1, max_steps=100, eval_episodes=0, **settings).close()
    said = [str(w.message) for w in caught if "policy 'speaker'" in str(w.message)]
    assert said == [f"policy 'speaker' (1 of the 3 agent rows of all env copies, so 1/3 of the run's 100 steps): its "
                    f"share of max_steps (1/3 of 100: 33.33 steps) is less than one {what}; --set {next(iter(settings))}"
                    f"=33 makes one fit): this policy takes 50 of its steps, the run at least 150"], said
