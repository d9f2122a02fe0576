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


def test_an_agent_multiplying_through_numpy_acts_at_one_torch_thread_as_its_trainer_does(caller_at_two, monkeypatch):
    """DQN's hand-derived path gives a two-thread run's threads to NumPy's BLAS and torch one (use_threads): acting
    at torch_threads (2) would spin both pools at once in the trainer's own evaluations."""
    trainer = canter.make_trainer("dqn", "CartPole-v1", run_dir=None, max_steps=64, torch_threads=2,
                                  learning_starts=32, train_freq=64, eval_every=64, eval_episodes=1,
                                  sets=["target_reward=null"])
    agent = trainer.agent
    assert agent.algorithm.numpy_products and agent.torch_threads == 2 and agent.acting_threads == 1
    seen, real = [], agent._act_numpy
    monkeypatch.setattr(agent, "_act_numpy", lambda *args: seen.append(torch.get_num_threads()) or real(*args))
    with trainer:
        for _ in trainer():
            pass
    assert seen and set(seen) == {1}  # the training steps' and the evaluation's
    seen.clear()
    torch.set_num_threads(2)  # a trainer leaves torch at its own count (canter.train puts the caller's back)
    canter.evaluate(agent, episodes=1)
    assert seen and set(seen) == {1} and torch.get_num_threads() == 2


def test_a_make_trainer_loop_trains_at_the_runs_threads_and_puts_the_callers_back(caller_at_two, tmp_path):
    """make_trainer left torch at the run's count for the process, and so did a loop over trainer() (train and
    resume put the caller's back; make_trainer and resume_trainer did not)."""
    seen = []
    kw = dict(max_steps=256, n_envs=2, n_steps=64, batch_size=64, n_epochs=1, eval_episodes=1, torch_threads=1,
              hooks={"after_update": lambda trainer, losses: seen.append(torch.get_num_threads())})
    trainer = canter.make_trainer("ppo", "CartPole-v1", **kw)
    assert torch.get_num_threads() == 2
    for _ in trainer():
        break  # closed here, its generator dropped
    assert seen == [1] and torch.get_num_threads() == 2
    list(trainer())
    assert set(seen) == {1} and len(seen) == 2 and torch.get_num_threads() == 2
    trainer.close()
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=tmp_path / "run", **kw)
    with run:
        for _ in run():
            break
    assert torch.get_num_threads() == 2
    resumed = canter.api.resume_trainer(tmp_path / "run", hooks=kw["hooks"])
    assert torch.get_num_threads() == 2
    with resumed:
        list(resumed())
    assert set(seen) == {1} and torch.get_num_threads() == 2


def test_two_trainers_iterated_in_turn_give_the_callers_threads_back(caller_at_two):
    """The first loop to end gave back the count it found (the caller's) while the second trained at its own; the
    second then gave back the first's, which stayed: the ends must hand the caller's count on."""
    kw = dict(max_steps=256, n_envs=2, n_steps=64, batch_size=64, n_epochs=1, eval_episodes=1)
    first = canter.make_trainer("ppo", "CartPole-v1", torch_threads=1, **kw)
    second = canter.make_trainer("ppo", "CartPole-v1", torch_threads=3, **{**kw, "max_steps": 384})
    loops = [first(), second()]
    next(loops[0]), next(loops[1])
    list(loops[0])
    assert torch.get_num_threads() == 3  # the second trains on at its count
    list(loops[1])
    assert torch.get_num_threads() == 2
    first.close(), second.close()


@pytest.mark.slow
def test_a_trainer_loop_left_suspended_until_the_interpreter_exits_ends_quietly(tmp_path):
    """A DQN loop (its run's threads given to NumPy's BLAS) still suspended when Python shuts down is closed as the
    interpreter clears its modules; giving the BLAS threads back then imported threadpoolctl, an ImportError that
    Python printed as 'Exception ignored in: <generator object Trainer.__call__ ...>' with its traceback."""
    from support import run_python

    done = run_python(
        "import canter\n"
        "trainer = canter.make_trainer('dqn', 'CartPole-v1', max_steps=4096, eval_episodes=0, learning_starts=64,\n"
        "                              train_freq=64)\n"
        "loop = trainer()\n"
        "next(loop)\n"
        "cycle = [loop]\n"
        "cycle.append(cycle)  # collected by the interpreter's last collection, after its modules are cleared\n",
        cwd=tmp_path)
    assert done.returncode == 0 and "Exception ignored" not in done.stderr, done.stderr


def test_threads_are_not_given_back_while_the_interpreter_shuts_down(monkeypatch):
    """The fast check of the test above: a thread-keeping block left while Python finalizes (no imports possible then,
    as a threadpoolctl that cannot be imported stands for) gives nothing back instead of raising ImportError."""
    import sys

    from canter.models import linear
    from canter.utils import threads_kept_in_turn

    monkeypatch.setattr(linear, "_blas_own_pool", None)  # canter had not limited OpenBLAS when the block began
    monkeypatch.setattr(linear, "_blas_threads", 1)
    with threads_kept_in_turn():
        monkeypatch.setattr(linear, "_blas_own_pool", 4)  # ... and the loop limited it (set_blas_threads)
        monkeypatch.setattr(sys, "is_finalizing", lambda: True)
        monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # importing it raises ImportError
    assert linear._blas_own_pool == 4  # left as it was: nothing to give back to
