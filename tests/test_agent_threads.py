"""Acting at the run's torch_threads: canter.evaluate and predict after canter.train, whose caller kept its own count."""
import numpy as np
import pytest
import torch

import canter


@pytest.fixture(scope="module")
def agents():
    """A feed-forward and a recurrent agent trained at one thread."""
    kept = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        yield {algo: canter.train(algo, env, run_dir=None, max_steps=512, torch_threads=1, seed=0,
                                  sets=["target_reward=null"])
               for algo, env in (("ppo", "CartPole-v1"), ("recurrent_ppo", "CartPoleNoVel-v1"))}
    finally:
        torch.set_num_threads(kept)


@pytest.fixture
def caller_at_two():
    """The caller's torch at two threads, as an unconfigured process on a 2-core host has it."""
    kept = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(kept)


def _spy(monkeypatch, algorithm, name):
    """Record the thread count each call of ``algorithm.name`` runs at."""
    seen, real = [], getattr(algorithm, name)

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(algorithm, name, spy)
    return seen


@pytest.mark.parametrize("algo", ["ppo", "recurrent_ppo"])
def test_evaluate_after_train_acts_at_the_runs_threads_and_puts_the_callers_back(agents, caller_at_two, monkeypatch,
                                                                                  algo):
    agent = agents[algo]
    assert agent.torch_threads == 1 and torch.get_num_threads() == 2  # train put the caller's count back
    seen = _spy(monkeypatch, agent.algorithm, "act_recurrent" if algo == "recurrent_ppo" else "predict")
    monkeypatch.setattr(agent, "_act_numpy", lambda *args: None)  # through algorithm.predict, to watch it
    canter.evaluate(agent, episodes=2)
    assert seen and set(seen) == {1}
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize("algo", ["ppo", "recurrent_ppo"])
def test_predict_and_explore_act_at_the_runs_threads_and_put_the_callers_back(agents, caller_at_two, monkeypatch, algo):
    agent = agents[algo]
    recurrent = algo == "recurrent_ppo"
    monkeypatch.setattr(agent, "_act_numpy", lambda *args: None)
    seen = _spy(monkeypatch, agent.algorithm, "act_recurrent" if recurrent else "predict")
    explored = seen if recurrent else _spy(monkeypatch, agent.algorithm, "act")
    obs = np.zeros(agent.observation_space.shape, dtype=np.float32)
    agent.predict(obs)
    assert torch.get_num_threads() == 2
    agent.explore(obs)
    assert torch.get_num_threads() == 2
    if recurrent:
        agent.predict_with_state(obs)
        assert torch.get_num_threads() == 2
    assert seen and explored and set(seen) | set(explored) == {1}
