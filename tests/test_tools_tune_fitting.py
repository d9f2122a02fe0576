"""canter tune's trial settings: sampled values fitted to each other, and the algorithm read from -f's file."""
from typing import Any

from canter.cli import main
from canter.errors import CanterError


def test_a_sampled_off_policy_phase_takes_at_most_a_gradient_step_per_env_step():
    """gradient_steps and train_freq were sampled independently (DQN: train_freq 1 with gradient_steps 64, one
    trial taking 3.5 of a study's 4 minutes for 3,000 steps); as rl-zoo3's samplers do, a trial's gradient_steps is
    now at most its train_freq env steps (not for train_freq in episodes), and a minibatch larger than the rollout
    is still the rollout."""
    from canter.config import resolve_config
    from canter.tools.tune_space import fit_params

    run, cfg = resolve_config("dqn", "CartPole-v1", train_freq=4, gradient_steps=64)
    assert fit_params({"train_freq": 4, "gradient_steps": 64, "lr": 1e-3}, run, cfg) == {
        "train_freq": 4, "gradient_steps": 4, "lr": 1e-3}
    assert fit_params({"train_freq": 64, "gradient_steps": 16}, run, cfg) == {"train_freq": 64, "gradient_steps": 16}
    assert fit_params({"gradient_steps": 64}, run, cfg) == {"gradient_steps": 64}  # train_freq not sampled: as set
    run, cfg = resolve_config("sac", "Pendulum-v1", train_freq=1, train_freq_unit="episode", gradient_steps=64)
    assert fit_params({"train_freq": 1, "gradient_steps": 64}, run, cfg) == {"train_freq": 1, "gradient_steps": 64}
    run, cfg = resolve_config("ppo", "CartPole-v1", n_steps=32, n_envs=2)
    assert fit_params({"batch_size": 256}, run, cfg) == {"batch_size": 64}


def test_tune_takes_the_algorithm_of_its_config_file(tmp_path, capsys, monkeypatch):
    """canter tune -f FILE without an algorithm needed one ('the following arguments are required: algo') where
    canter train -f FILE takes the file's (a best.yaml or a run's config.yaml names it); a file without one is a
    one-line error saying how to name it."""
    import canter.tools.tune as tune_module

    seen = []

    def tune(algo: str, env: Any, trials: int, **kw: Any) -> None:
        seen.append((algo, kw["config_file"]))
        raise CanterError("stop here")  # the study itself is the other tests'

    monkeypatch.setattr(tune_module, "tune", tune)
    cfg = tmp_path / "run.yaml"
    cfg.write_text("algo: dqn\nenv: CartPole-v1\n")
    assert main(["tune", "-f", str(cfg), "--trials", "1"]) == 2
    assert seen == [("dqn", str(cfg))] and "stop here" in capsys.readouterr().err
    (tmp_path / "bare.yaml").write_text("env: CartPole-v1\n")
    assert main(["tune", "-f", str(tmp_path / "bare.yaml")]) == 2
    assert "has no 'algo' key: name it, canter tune ALGO -f" in capsys.readouterr().err
    assert main(["tune", "--env", "CartPole-v1"]) == 2
    assert "the following arguments are required: algo" in capsys.readouterr().err


def test_a_sampled_rollout_larger_than_the_trial_budget_is_lowered_to_fit_it():
    """The budget is checked between rollouts: `canter tune ppo --env CartPole-v1 --max-steps 1024` sampled
    n_steps 2048 with the preset's 16 envs and trained that trial for 32,768 steps, 32x the budget, and its
    return was compared with those of trials that kept to it. A sampled n_steps is now at most
    max_steps // n_envs (at least 1; the minibatch then fits the lowered rollout); a fixed n_steps is the
    user's and stays as set."""
    from canter.config import resolve_config
    from canter.tools.tune_space import fit_params

    run, cfg = resolve_config("ppo", "CartPole-v1", max_steps=1024, n_steps=2048)
    assert run.n_envs == 16
    assert fit_params({"n_steps": 2048, "batch_size": 256}, run, cfg) == {"n_steps": 64, "batch_size": 256}
    assert fit_params({"n_steps": 2048, "batch_size": 512}, run, cfg) == {"n_steps": 64, "batch_size": 512}
    run, cfg = resolve_config("ppo", "CartPole-v1", max_steps=100, n_envs=4, n_steps=2048)
    assert fit_params({"n_steps": 2048, "batch_size": 64}, run, cfg) == {"n_steps": 25, "batch_size": 64}
    run, cfg = resolve_config("ppo", "CartPole-v1", max_steps=100, n_envs=4, n_steps=16)  # as tune resolves a trial
    assert fit_params({"n_steps": 16}, run, cfg) == {"n_steps": 16}  # within the budget: as sampled
    run, cfg = resolve_config("ppo", "CartPole-v1", max_steps=100, n_envs=4, n_steps=2048)
    assert fit_params({"batch_size": 64}, run, cfg) == {"batch_size": 64}  # n_steps not sampled: as set
    run, cfg = resolve_config("ppo", "CartPole-v1", max_steps=2, n_envs=4, n_steps=2048)
    assert fit_params({"n_steps": 2048}, run, cfg) == {"n_steps": 1}


def test_a_sampled_rollout_of_a_multi_agent_env_is_lowered_to_the_budget_too():
    """The rollout was lowered only for a single-agent env: `canter tune mappo --env pettingzoo:tests.match_agents
    --max-steps 256 --n-envs 2` with a sampled n_steps 2048 trained its trial for 8,192 steps (2048 x 2 copies x 2
    agents, each an env step), 32x the budget. n_steps is now at most max_steps // (n_envs x agent rows per copy)."""
    from canter.config import resolve_config
    from canter.tools.tune_space import fit_params, step_rows

    env = "pettingzoo:tests.match_agents"
    run, cfg = resolve_config("mappo", env, max_steps=256, n_envs=2, n_steps=2048)
    assert step_rows(run) == 4
    assert fit_params({"n_steps": 2048, "lr": 1e-3}, run, cfg) == {"n_steps": 64, "lr": 1e-3}
    run, cfg = resolve_config("mappo", env, max_steps=256, n_envs=2, n_steps=64)
    assert fit_params({"n_steps": 64}, run, cfg) == {"n_steps": 64}  # 64 x 4 rows: within the budget
    run, cfg = resolve_config("ppo", env, max_steps=256, n_envs=2, n_steps=2048, policies="agent")
    assert fit_params({"n_steps": 2048}, run, cfg) == {"n_steps": 64}  # one policy per agent: the same rows


def test_a_sampled_rollout_of_explorers_is_lowered_to_the_budget_too():
    """The rollout was lowered only for a run in one process: `canter tune impala --env CartPole-v1 --set
    explorers=2 --n-envs 8 --max-steps 200` with a sampled n_steps 128 trained its trial for 1,024 steps (one
    explorer's rollout, 128 x 8 envs), 5x the budget. An asynchronous algorithm's n_steps is now at most
    max_steps // n_envs (each update learns from one explorer's rollout), a synchronous one's (PPO, A2C with
    explorers) max_steps // (n_envs x explorers) (each update gathers every explorer's), and the minibatch fits."""
    from canter.config import resolve_config
    from canter.tools.tune_space import fit_params

    for algo in ("impala", "appo"):
        run, cfg = resolve_config(algo, "CartPole-v1", max_steps=200, n_envs=8, explorers=2, n_steps=128)
        assert fit_params({"n_steps": 128, "lr": 1e-3}, run, cfg) == {"n_steps": 25, "lr": 1e-3}
        run, cfg = resolve_config(algo, "CartPole-v1", max_steps=200, n_envs=8, explorers=2, n_steps=16)
        assert fit_params({"n_steps": 16}, run, cfg) == {"n_steps": 16}  # 128 steps: within the budget
    run, cfg = resolve_config("appo", "CartPole-v1", max_steps=200, n_envs=8, explorers=2, n_steps=128)
    assert fit_params({"n_steps": 128, "batch_size": 512}, run, cfg) == {"n_steps": 25, "batch_size": 200}
    run, cfg = resolve_config("ppo", "CartPole-v1", max_steps=1024, n_envs=8, explorers=2, n_steps=2048)
    assert fit_params({"n_steps": 2048, "batch_size": 256}, run, cfg) == {"n_steps": 64, "batch_size": 256}
    run, cfg = resolve_config("ppo", "CartPole-v1", max_steps=1024, n_envs=8, explorers=2, n_steps=8)
    assert fit_params({"batch_size": 256}, run, cfg) == {"batch_size": 128}  # 8 x 8 envs x 2 explorers


def test_every_synchronous_algorithm_with_explorers_is_capped_and_the_docs_say_so():
    """docs/tools.md said the n_steps cap with explorers (max_steps // (n_envs x explorers)) is PPO's or A2C's, but
    TRPO, NPG and REINFORCE run through the same synchronous explorer trainer and are capped alike."""
    import re
    from pathlib import Path

    from canter.config import resolve_config
    from canter.registry import registered
    from canter.tools.tune_space import fit_params

    sync = sorted(n for n, a in registered("algorithm").items() if a.family == "on_policy")
    for algo in (n for n in sync if not registered("algorithm")[n].multiagent_only):
        run, cfg = resolve_config(algo, "CartPole-v1", max_steps=1024, n_envs=8, explorers=2, n_steps=2048)
        assert fit_params({"n_steps": 2048}, run, cfg) == {"n_steps": 64}, algo
    doc = " ".join((Path(__file__).parents[1] / "docs" / "tools.md").read_text().split())
    named = re.search(r"x the explorers for a synchronous algorithm \(([^:]*):", doc)
    assert named and sorted(n.lower() for n in named[1].split(", ")) == sync
