"""``canter.play.play``, the Python side of ``canter play`` (docs/tools.md): the run's env as the command builds
it, and bad arguments refused in one line as ``canter.evaluate`` refuses them."""
import pytest

from canter.errors import CanterError
from canter.play import play
from support import untrained_agent

# the agents here are built by short trainers that never train: their budget warnings say nothing
pytestmark = pytest.mark.filterwarnings("ignore:.*(less than one (rollout|training phase)|never learns).*")


@pytest.fixture(scope="module")
def short_episodes():
    """A PPO agent of a CartPole run trained with ``max_episode_steps: 5`` (its untrained policy's episodes last
    8 steps or more without it)."""
    return untrained_agent("ppo", "CartPole-v1", n_envs=1, n_steps=64, env_kwargs={"max_episode_steps": 5})


def test_play_plays_the_runs_own_env_kwargs(short_episodes):
    """``play(agent, "CartPole-v1")`` of a run trained with ``max_episode_steps: 5`` played CartPole's own 500-step
    limit (episodes of 9 and 10 steps), where ``canter play RUN`` played the run's env (5 steps); the env id may now
    be left out, as ``canter.evaluate`` takes it, and ``env_kwargs`` are merged over the run's."""
    assert play(short_episodes, "CartPole-v1", 2) == [5.0, 5.0]
    assert play(short_episodes, episodes=2) == [5.0, 5.0]
    assert play(short_episodes, env_kwargs={"max_episode_steps": 3}) == [3.0]
    assert play(short_episodes, "CartPole-v0", seed=3)[0] > 5  # another id: its own defaults, as canter play --env


def test_play_takes_the_env_keyword_that_tools_md_documents(short_episodes):
    """docs/tools.md documents ``play(agent, env=None, episodes=1, ...)``, the keyword ``canter.evaluate`` takes,
    and its own error says 'env must be an env id'; the parameter was ``env_id``, so ``play(agent, env=...)`` was a
    TypeError."""
    assert play(short_episodes, env="CartPole-v1", episodes=2) == [5.0, 5.0]


def test_play_takes_numpy_integers(short_episodes):
    """NumPy's integers pass the shared episodes/seed check (canter.evaluate takes them); play hands gymnasium's
    seeding, which takes Python ints only, their int."""
    import numpy as np

    assert play(short_episodes, episodes=np.int64(2), seed=np.int64(3)) == play(short_episodes, episodes=2, seed=3)


@pytest.mark.parametrize("kwargs, needle", [
    (dict(episodes=0), "episodes must be a whole number >= 1, got 0"),  # was [] (nothing played, no error)
    (dict(episodes="2"), "episodes must be a whole number >= 1, got '2'"),  # TypeError traceback
    (dict(seed=-1), r"seed must be a whole number between 0 and 2\*\*32 - 1, got -1"),  # gymnasium's error.Error
    (dict(seed=None), "seed must be a whole number"),  # TypeError: None + int
    (dict(video_dir=""), "video_dir must be a directory path"),  # played without recording, silently
    (dict(render="no"), "render must be True or False, got 'no'"),  # truthy: a window opened
    (dict(env=""), "env must be an env id"),  # AttributeError
    (dict(env_kwargs=[1]), "env_kwargs must be a mapping, got \\[1\\]"),  # TypeError from dict()
    (dict(env_kwargs={"max_episode_step": 3}), "bad env_kwargs for 'CartPole-v1': .*did you mean 'max_episode_steps'"),
    # TypeError tracebacks: env_id was the parameter's name until ac73024; misspellings
    (dict(env_id="CartPole-v1"), "play.play\\(\\) got an unexpected keyword argument 'env_id'; did you mean 'env'"),
    (dict(n_episodes=2), "unexpected keyword argument 'n_episodes'; did you mean .*'episodes'"),
    (dict(vidoe_dir="v"), "unexpected keyword argument 'vidoe_dir'; did you mean 'video_dir'"),
])
def test_play_refuses_bad_arguments_in_one_line(short_episodes, kwargs, needle):
    """Bad arguments of ``canter.play.play`` were tracebacks (TypeError, AttributeError, gymnasium's error.Error)
    or were ignored; they are now one-line CanterErrors, as ``canter.evaluate``'s are."""
    with pytest.raises(CanterError, match=needle) as info:
        play(short_episodes, **kwargs)
    assert "\n" not in str(info.value)


def test_play_needs_an_env_for_an_agent_without_a_run():
    """An agent that carries no run (``run_config``) has no env of its own to play."""
    with pytest.raises(CanterError, match=r"play needs an env id for an agent without a run \(one that canter.train, "
                                          r"canter.load or canter.make_agent returned plays its run's own env\)"):
        play(object())
