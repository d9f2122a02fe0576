"""An env id given to canter.train / make_trainer under another keyword (``env_id=``, gymnasium's ``make_vec_env``
name; ``env_name=``; ``algorithm=``) was 'no environment given' (or 'unknown config key'), naming neither the
keyword nor ``env``; it is one line naming the keyword and the argument meant."""
import pytest

import canter
from canter.errors import CanterError


@pytest.mark.parametrize("key, meant", [("env_id", "env"), ("env_name", "env"), ("envs", "env"), ("algorithm", "algo")])
@pytest.mark.parametrize("positional", [("ppo",), ("ppo", "CartPole-v1")])
def test_an_id_under_another_keyword_is_named(key, meant, positional):
    value = "ppo" if meant == "algo" else "CartPole-v1"
    with pytest.raises(CanterError, match=rf"unknown keyword argument '{key}'; did you mean '{meant}'\?"):
        canter.make_trainer(*positional, **{key: value})


@pytest.mark.parametrize("key", ["environment", "n_env", "env_kwarg"])
def test_no_env_and_an_unknown_keyword_names_the_keyword(key):
    with pytest.raises(CanterError, match=rf"^no environment given, and .* has no argument '{key}'.*env="):
        canter.train("ppo", **{key: {"a": 1} if key == "env_kwarg" else 4})


def test_a_number_under_envs_still_offers_n_envs():
    with pytest.raises(CanterError, match=r"unknown config key 'envs'; did you mean .*'n_envs'"):
        canter.make_trainer("ppo", "CartPole-v1", envs=4)


def test_eval_env_is_not_taken_for_env():
    with pytest.raises(CanterError) as info:
        canter.make_trainer("ppo", "CartPole-v1", eval_env="CartPole-v1")
    assert "did you mean 'env'" not in str(info.value)
