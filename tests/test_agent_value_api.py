"""``agent.value(obs)``, the critic's state values the on-policy trainers bootstrap with, called as a user calls
``predict``: one observation was NumPy's matmul traceback (a batch was required), and an agent of an algorithm
without a state-value critic (DQN, TD3) was an AttributeError traceback."""
import numpy as np
import pytest
import torch

from canter.errors import CanterError
from support import untrained_agent

pytestmark = pytest.mark.filterwarnings("ignore:.*(less than one (rollout|training phase)|never learns).*")


@pytest.fixture(scope="module")
def ppo():
    return untrained_agent("ppo", "Pendulum-v1", n_envs=1, n_steps=64)


def test_one_observation_gives_one_value_as_the_batch_does(ppo):
    obs = np.array([[0.5, -0.5, 1.0], [0.1, 0.2, -3.0]], np.float32)
    batch = ppo.value(obs)
    assert batch.shape == (2,)
    for i, o in enumerate(obs):
        for given in (o, o.tolist(), torch.from_numpy(o)):
            one = ppo.value(given)
            assert one.shape == () and torch.allclose(one, batch[i], atol=1e-6)
    assert ppo.value(obs.tolist()).shape == (2,)


def test_a_wrong_shape_is_one_line(ppo):
    with pytest.raises(CanterError, match=r"expected one observation of shape \(3,\)"):
        ppo.value(np.zeros(4, np.float32))


@pytest.mark.parametrize("algo, env", [("dqn", "CartPole-v1"), ("td3", "Pendulum-v1")])
def test_an_algorithm_without_a_state_value_critic_is_one_line(algo, env):
    agent = untrained_agent(algo, env, n_envs=1)
    with pytest.raises(CanterError, match=rf"state values .* {algo.upper()} has none"):
        agent.value(np.zeros((2, *agent.observation_space.shape), np.float32))
