"""A misspelled keyword argument of the Python API is a one-line CanterError naming the closest argument (it was
a TypeError traceback, or, for make_trainer's own arguments, an unknown config key with no close match)."""
import numpy as np
import pytest

import canter
from canter.errors import CanterError
from support import untrained_agent

pytestmark = pytest.mark.filterwarnings("ignore:.*(less than one (rollout|training phase)|never learns).*")


@pytest.mark.parametrize("kwargs, near", [
    ({"quite": True}, "'quiet'"),            # was: unknown config key 'quite'; 80 choices
    ({"rundir": None}, "'run_dir'"),
    ({"set": ["lr=0.1"]}, "'sets'"),          # was: did you mean 'dataset' or 'seed' or 'agent'?
    ({"config": "run.yaml"}, "'config_file'"),  # was: an option of the command, -f FILE
    ({"hook": {}}, "'hooks'"),
])
@pytest.mark.parametrize("call", [canter.make_trainer, canter.train])
def test_a_misspelled_argument_of_make_trainer_or_train_names_it(call, kwargs, near):
    with pytest.raises(CanterError, match=rf"unknown keyword argument '{next(iter(kwargs))}'; did you mean {near}"):
        call("ppo", "CartPole-v1", max_steps=64, **kwargs)


def test_hparams_dotted_keywords_and_other_libraries_names_keep_their_answers():
    trainer = canter.make_trainer("ppo", "CartPole-v1", max_steps=64, **{"hparams.lr": 0.0123})
    trainer.close()
    assert trainer.config.lr == 0.0123
    with pytest.raises(CanterError, match="canter calls it 'callbacks'"):
        canter.make_trainer("ppo", "CartPole-v1", callback=[])


@pytest.mark.parametrize("call, message", [
    (lambda a: canter.load("no/such/run", weight_only=True),
     r"canter.load\(\) got an unexpected keyword argument 'weight_only'; did you mean 'weights_only'\?$"),
    (lambda a: canter.load("no/such/run", devcie="cpu"), "did you mean 'device'"),
    (lambda a: canter.load("no/such/run", env="CartPole-v1"), r"has no argument 'env' \(Stable-Baselines3's\)"),
    (lambda a: canter.evaluate(a, episode=3), "canter.evaluate.* 'episode'; did you mean 'episodes'"),
    (lambda a: canter.evaluate(a, n_eval_episodes=3), "canter calls it 'episodes'"),
    (lambda a: a.predict(np.zeros(4), determinstic=False), "did you mean 'deterministic'"),
    (lambda a: a.predict(np.zeros(4), False), "deterministic is a keyword"),
    (lambda a: a.predict(np.zeros(4), deterministic="no"), "deterministic must be True or False, got 'no'"),
    (lambda a: a.explore(np.zeros(4), gen=None), "did you mean 'generator'"),
    (lambda a: a.save("somewhere", overwrite=True), r"agent.save\(\) .* 'overwrite'; it takes path$"),
])
def test_a_misspelled_keyword_of_load_evaluate_predict_or_save_is_one_line(call, message):
    agent = untrained_agent("ppo", "CartPole-v1")
    with pytest.raises(CanterError, match=message) as info:
        call(agent)
    assert "\n" not in str(info.value)


def test_predict_takes_numpy_bools_for_deterministic():
    """deterministic='no' (truthy) was silently deterministic; NumPy's bools stay taken, as evaluate takes them."""
    agent = untrained_agent("ppo", "CartPole-v1")
    obs = np.zeros(4, dtype=np.float32)
    assert agent.predict(obs, deterministic=np.True_) == agent.predict(obs, deterministic=True)


@pytest.mark.parametrize("value", ["no", 0.5, None])
@pytest.mark.parametrize("method", ["predict", "predict_with_state"])
def test_a_recurrent_agents_deterministic_must_be_a_bool(method, value):
    """RecurrentAgent.predict took deterministic='no' or 0.5 (truthy) as True and None as False (it sampled), as
    Agent.predict did before 30e760c; predict_with_state handed the value to the model as it was."""
    agent = untrained_agent("recurrent_ppo", "CartPole-v1")
    obs = np.zeros(4, dtype=np.float32)
    with pytest.raises(CanterError, match=f"^deterministic must be True or False, got {value!r}$"):
        getattr(agent, method)(obs, deterministic=value)
    getattr(agent, method)(obs, deterministic=np.False_)  # NumPy's bools, as Agent.predict takes them


def test_play_takes_numpy_bools_for_render_as_evaluate_and_load_take_theirs():
    """play(render=np.False_) was refused ('render must be True or False'), where evaluate's deterministic and
    load's weights_only take NumPy's bools; one helper checks all of them now."""
    from canter.play import play

    agent = untrained_agent("ppo", "CartPole-v1", env_kwargs={"max_episode_steps": 5}, target_reward=None,
                            max_steps=512)  # the preset's 475 out of reach, and less than one rollout: warnings
    assert len(play(agent, episodes=1, render=np.False_)) == 1
    with pytest.raises(CanterError, match="^render must be True or False, got 'no'$"):
        play(agent, episodes=1, render="no")


def test_a_type_error_inside_a_checked_function_is_left_alone():
    from canter.errors import keywords_checked

    @keywords_checked("f")
    def f(x):
        return len(x)

    assert f(x=[1, 2]) == 2
    with pytest.raises(TypeError, match="has no len"):
        f(3)
    with pytest.raises(CanterError, match=r"f\(\) got an unexpected keyword argument 'z'; it takes x$"):
        f(z=3)


@pytest.mark.parametrize("args, message", [
    (("CartPole-v1",), r"'CartPole-v1' is an env id, not an algorithm; the algorithm comes first: "
                       r"canter.train\('ppo', 'CartPole-v1'\)"),            # was: unknown algorithm; 24 choices
    (("CartPole-v1", "dqn"), r"comes first: canter.train\('dqn', 'CartPole-v1'\)"),
    (("ppo", "MlpPolicy"), "'MlpPolicy' is a Stable-Baselines3 policy, not an env"),  # was: unknown env id
    (("ppo",), r"no environment given; .* in Python canter.train\('ppo', 'CartPole-v1'\) or env="),
])
def test_arguments_in_sb3s_places_name_the_order_canter_takes(args, message):
    with pytest.raises(CanterError, match=message):
        canter.make_trainer(*args)


@pytest.mark.parametrize("call, message", [
    (lambda: canter.train("ppo", "CartPole-v1", 10_000),  # SB3's learn(10_000)
     r"canter.train\(\) takes from 0 to 2 positional arguments but 3 were given; the other arguments are keywords"),
    (lambda: canter.make_trainer("ppo", "CartPole-v1", "run.yaml"), r"canter.make_trainer\(\) takes from 0 to 2"),
    (lambda: canter.resume("no/such/run", 2000), r"canter.resume\(\) takes 1 positional .* canter.resume\(run_dir, max"),
])
def test_too_many_positional_arguments_say_which_are_keywords(call, message):
    with pytest.raises(CanterError, match=message):  # was a TypeError traceback
        call()


def test_evaluate_and_load_take_numpy_integers_and_bools(tmp_path):
    """canter.evaluate(agent, episodes=np.int64(3)) said 'episodes must be a whole number >= 1, got np.int64(3)'
    (make_trainer takes NumPy numbers: a sweep over np.arange)."""
    agent = untrained_agent("ppo", "CartPole-v1")
    result = canter.evaluate(agent, episodes=np.int64(3), seed=np.uint32(5), deterministic=np.True_)
    assert result.episodes == 3 and result.returns == canter.evaluate(agent, episodes=3, seed=5).returns
    canter.train("ppo", "CartPole-v1", max_steps=64, n_envs=1, n_steps=64, batch_size=64, n_epochs=1, eval_episodes=1,
                 run_dir=tmp_path / "run")
    assert canter.load(tmp_path / "run", weights_only=np.True_).run_config.env == "CartPole-v1"
    with pytest.raises(CanterError, match="episodes must be a whole number >= 1, got 3.5"):
        canter.evaluate(agent, episodes=3.5)
