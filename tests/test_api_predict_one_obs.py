"""predict (and explore) as a Stable-Baselines3 user calls them on one observation from a plain gymnasium env:
shapes, types, raw Tuple and Discrete observations refused or packed (split from test_api_usage.py)."""
import gymnasium as gym
import numpy as np
import pytest
import torch

from canter.errors import CanterError
from support import untrained_agent as _agent

# the agents here are built by short trainers that never train: their budget warnings say nothing
pytestmark = pytest.mark.filterwarnings("ignore:.*(less than one (rollout|training phase)|never learns).*")


@pytest.mark.parametrize("algo,env_id", [("ppo", "CartPole-v1"), ("dqn", "CartPole-v1"), ("td3", "Pendulum-v1")])
def test_predict_takes_one_observation_from_env_reset(algo, env_id):
    agent = _agent(algo, env_id)
    env = gym.make(env_id)
    obs, _ = env.reset(seed=0)
    batch = agent.predict(obs[None])
    assert batch.shape == (1, *env.action_space.shape)
    for single in (obs, obs.tolist(), obs.astype(np.float64), torch.as_tensor(obs)):
        action = agent.predict(single)
        assert np.shape(action) == env.action_space.shape
        np.testing.assert_array_equal(action, batch[0])
        assert env.action_space.contains(action)
        env.step(action)
        assert np.shape(agent.explore(single)) == env.action_space.shape
    env.close()


def test_predict_wrong_shape_is_a_clear_error():
    agent = _agent("ppo", "CartPole-v1")
    with pytest.raises(CanterError, match=r"shape \(4,\).*got an array of shape \(2, 5\)"):
        agent.predict(np.zeros((2, 5), np.float32))
    with pytest.raises(CanterError, match="pack_observations"):
        agent.predict({"observation": np.zeros(4, np.float32)})


def test_predict_refuses_non_numeric_and_ragged_observations_in_one_line():
    agent = _agent("ppo", "CartPole-v1")
    with pytest.raises(CanterError, match="numeric.*got <U1 values"):
        agent.predict(np.array(["a"] * 4))  # was a TypeError from torch.from_numpy
    with pytest.raises(CanterError, match="numeric.*got complex128 values"):
        agent.predict(np.array([1, 2, 3, 4j]))  # was acted on with the imaginary part dropped
    with pytest.raises(CanterError, match="pack_observations"):
        agent.predict((np.zeros(2, np.float32), 1))  # a Tuple observation: was NumPy's inhomogeneous-shape ValueError


def test_predict_on_env_resets_obs_info_pair_says_to_pass_the_observation_alone():
    """agent.predict(env.reset()) (SB3's VecEnv.reset returns the observation alone; gymnasium's reset (obs, info))
    was answered with the packing of Dict and Tuple observations, which the CartPole agent does not need."""
    agent = _agent("ppo", "CartPole-v1")
    pair = gym.make("CartPole-v1").reset(seed=0)
    with pytest.raises(CanterError, match=r"got a pair ending in a dict, as env\.reset\(\) returns \(obs, info\): "
                                          r"pass the observation alone \(obs, info = env\.reset\(\)\)$"):
        agent.predict(pair)
    assert np.shape(agent.predict(pair[0])) == ()


def test_predict_takes_a_raw_tuple_of_discretes():
    """Blackjack's env.reset() gives (11, 10, 0), where the agent takes the 45-wide one-hot vector: the error
    named the shapes only, then the wrapper that packs it; the agent now packs it as the wrapper does (from its
    space's packed_layout, canter.envs.raw_observations). A list of those numbers is still a wrong shape."""
    agent = _agent("ppo", "Blackjack-v1", n_envs=1, n_steps=64)
    obs, _ = gym.make("Blackjack-v1").reset(seed=0)
    from canter.envs.packing import pack_observations

    packed, _ = pack_observations(gym.make("Blackjack-v1")).reset(seed=0)
    assert np.shape(agent.predict(packed)) == () and agent.predict(obs) == agent.predict(packed)
    with pytest.raises(CanterError, match=r"shape \(45,\).*got an array of shape \(3,\).*pack_observations"):
        agent.predict(list(obs))


def test_predict_refuses_discrete_observations_outside_the_space():
    agent = _agent("ppo", "FrozenLake-v1", n_envs=1, n_steps=64)
    assert np.shape(agent.predict(15)) == () and agent.predict([0, 15]).shape == (2,)
    for bad in (16, -1, 3.5, [1, 16]):  # 16 and -1 were torch's one_hot RuntimeError, 3.5 was taken as 3
        with pytest.raises(CanterError, match=r"Discrete observations are integers 0\.\.15"):
            agent.predict(bad)


def test_sampling_predict_leaves_the_training_ou_noise_alone():
    agent = _agent("td3", "Pendulum-v1", n_envs=2, action_noise="ou")
    agent.algorithm.ou_state = noise = torch.tensor([[0.3], [-0.2]])  # the 2 training envs' process
    agent.predict(np.zeros(3, np.float32), deterministic=False)  # it was replaced by a 1-row process
    assert agent.algorithm.ou_state is noise


def test_recurrent_predict_takes_one_observation():
    agent = _agent("recurrent_ppo", "CartPole-v1")
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=0)
    first = agent.predict(obs, episode_start=True)
    assert np.shape(first) == () and env.action_space.contains(first)
    assert np.shape(agent.predict(obs, episode_start=False)) == ()
    assert agent.predict(obs[None], episode_start=np.ones(1, bool)) == first  # the same fresh memory
    env.close()
