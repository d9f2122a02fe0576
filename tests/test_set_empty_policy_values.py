"""``--set policy_hparams.POLICY.KEY=`` with nothing after the ``=``: a policy's hyperparameter is a typed key as
``--set KEY=`` is (0a4e63b8), but its empty text was read as YAML's null first, so ``lr=`` said 'got null' and an
optional one (``clip_range_vf=``) was taken as null without a word, where ``--set clip_range_vf=`` is refused. It
says 'got an empty value' as the run's own hyperparameter does; the word null still reads as null."""
import pytest

from canter.config import resolve_config
from canter.errors import CanterError

MIXED = "pettingzoo:tests.mixed_agents"


@pytest.mark.parametrize("item, said", [
    ("lr=", "'policy_hparams.speaker.lr' must be a float, got an empty value"),
    ("n_epochs= ", "'policy_hparams.speaker.n_epochs' must be an int, got an empty value"),
    ("clip_range_vf=", "'policy_hparams.speaker.clip_range_vf' must be a float or null, got an empty value"),
])
def test_an_empty_policy_hyperparameter_is_named_empty(item, said):
    with pytest.raises(CanterError) as info:
        resolve_config("ppo", MIXED, sets=["policies=type", f"policy_hparams.speaker.{item}"])
    assert str(info.value) == said


def test_the_null_word_is_still_null():
    with pytest.raises(CanterError, match=r"^'policy_hparams.speaker.lr' must be a float, got null$"):
        resolve_config("ppo", MIXED, sets=["policies=type", "policy_hparams.speaker.lr=null"])
    run, _ = resolve_config("ppo", MIXED, sets=["policies=type", "policy_hparams.speaker.clip_range_vf=null"])
    assert run.policy_hparams == {"speaker": {"clip_range_vf": None}}
