"""from_replay's return annotation resolves (canter.data.dataset and canter.data.dataset_replay import each other)."""
import typing

from canter.data.dataset import TransitionDataset
from canter.data.dataset_replay import from_replay


def test_from_replay_s_return_annotation_resolves():
    """99db01b put the name under TYPE_CHECKING only: typing.get_type_hints still raised NameError."""
    assert typing.get_type_hints(from_replay)["return"] is TransitionDataset
