"""A recurrent agent's ``value(obs)`` with a batch of another size than the training envs' (a callback looking at
some states' values) replaced the training memory with an empty one of that size: the rollout went on from wiped
memory, and the run differed from one without the call. It now acts from empty memory of its own."""
import numpy as np
import pytest
import torch

import canter

pytestmark = pytest.mark.filterwarnings("ignore:.*(less than one (rollout|training phase)|never learns).*")
RUN = dict(max_steps=192, n_steps=16, n_envs=4, seed=0, eval_episodes=0, lstm_hidden=16, net_arch=[16])


def _weights(trainer):
    return torch.cat([p.detach().flatten() for p in trainer.agent.algorithm.model.parameters()])


def test_value_of_another_batch_size_leaves_the_training_memory():
    trainer = canter.make_trainer("recurrent_ppo", "CartPole-v1", **RUN)
    loop = trainer()
    next(loop)
    h, c = (m.clone() for m in trainer.agent.memory["sample"])
    values = trainer.agent.value(np.zeros((2, 4), np.float32))
    assert values.shape == (2,)
    assert torch.equal(trainer.agent.memory["sample"][0], h) and torch.equal(trainer.agent.memory["sample"][1], c)
    loop.close()
    trainer.close()


@pytest.mark.slow  # two short runs: about 1 s each on a quiet 2-core machine, over 2 s under load
def test_a_callback_reading_values_leaves_the_run_as_it_was():
    def peek(trainer, losses):
        trainer.agent.value(np.zeros((3, 4), np.float32))

    runs = []
    for hooks in (None, {"after_update": peek}):
        trainer = canter.make_trainer("recurrent_ppo", "CartPole-v1", hooks=hooks, **RUN)
        for _ in trainer():
            pass
        trainer.close()
        runs.append(_weights(trainer))
    assert torch.equal(runs[0], runs[1])


def test_value_of_one_observation_is_one_value_as_for_a_feed_forward_agent():
    """``agent.value(obs)`` of one observation (or a list of them) gives a 0-d tensor (a batch of them) as
    ``Agent.value`` does; a recurrent agent's raised torch's 'input.size(-1) must be equal to input_size'."""
    trainer = canter.make_trainer("recurrent_ppo", "CartPole-v1", **RUN)
    agent = trainer.agent
    obs = np.array([0.01, -0.02, 0.03, 0.04], np.float32)
    one = agent.value(obs)
    assert one.shape == ()
    fresh = agent.algorithm.value_recurrent(torch.as_tensor(obs[None]), agent.algorithm.model.initial_state(1))
    assert torch.equal(one, fresh[0])  # a batch of one, not the training envs' (4): from empty memory
    assert agent.value([obs, obs]).shape == (2,)
    assert agent.value(torch.as_tensor(obs)).shape == ()
    trainer.close()
