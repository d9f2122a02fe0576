"""``agent.explore(obs, generator=...)`` takes a ``torch.Generator`` (or None, the agent's own stream): a NumPy
Generator, a seed or a string was torch's TypeError traceback from inside the algorithm's draw, and ``generator=0``
(falsy) drew from the agent's own stream without a word; each is one line now."""
import numpy as np
import pytest
import torch

from canter.errors import CanterError
from support import untrained_agent

pytestmark = pytest.mark.filterwarnings("ignore:.*(less than one (rollout|training phase)|never learns).*")


@pytest.fixture(scope="module", params=[("ppo", "Pendulum-v1"), ("dqn", "CartPole-v1"), ("recurrent_ppo", "CartPole-v1")])
def agent(request):
    algo, env = request.param
    return untrained_agent(algo, env, n_envs=1, **({"n_steps": 64} if algo != "dqn" else {}))


@pytest.mark.parametrize("generator", [0, 5, "seed", np.random.default_rng(0)])
def test_explore_refuses_a_generator_that_is_no_torch_generator(agent, generator):
    own = agent.algorithm.generator
    with pytest.raises(CanterError, match=r"generator must be a torch\.Generator.*manual_seed"):
        agent.explore(agent.observation_space.sample(), generator=generator)
    assert agent.algorithm.generator is own


def test_explore_with_a_torch_generator_repeats_its_draws(agent):
    obs = np.stack([agent.observation_space.sample() for _ in range(16)])
    first = agent.explore(obs, generator=torch.Generator().manual_seed(3))
    if hasattr(agent, "begin_episodes"):
        agent.begin_episodes(np.ones(16, bool), exploring=True)
    assert np.array_equal(first, agent.explore(obs, generator=torch.Generator().manual_seed(3)))
