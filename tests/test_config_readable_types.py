"""Which hyperparameter types a user's algorithm may declare (config_values.readable_type): those coerce reads
from YAML, --set and flags are accepted, nested lists and lists of mappings included; the rest are refused."""
from __future__ import annotations

import typing
from typing import Any, Literal

import pytest

from canter.config_values import coerce, readable_type, type_name


@pytest.mark.parametrize("tp", [int, float, str, bool, list, dict, Any, list[int], list[list[int]], list[dict],
                                list[dict[str, int]], typing.Optional[list[list[float]]], list[typing.Optional[int]],
                                typing.List[typing.List[str]], dict[str, list[int]]])
def test_types_coerce_reads_are_readable(tp: Any) -> None:
    """list[list[int]] and list[dict] were read item by item by coerce, yet refused by readable_type."""
    assert readable_type(tp)


@pytest.mark.parametrize("tp", [tuple, tuple[int, int], Literal["a", "b"], typing.Union[int, str], list[tuple],
                                list[Literal["a"]], list[list[tuple]]])
def test_types_coerce_cannot_read_are_not(tp: Any) -> None:
    """Tuples, Literals and unions of two types, at any depth of a list, stay refused."""
    assert not readable_type(tp)


def test_nested_list_is_coerced_and_named() -> None:
    """A nested list's text from --set is read as lists of ints, and its type is named in full."""
    assert coerce(list[list[int]], "[[8], [4, 4]]", "hparams.heads") == [[8], [4, 4]]
    assert type_name(list[list[int]]) == "list[list[int]]"
    assert type_name(list[int]) == "list[int]"


def test_user_algorithm_with_nested_list_hyperparameter_is_accepted() -> None:
    """A PPO subclass declaring list[list[int]] passes the user-algorithm check (it was refused in one line)."""
    import dataclasses

    from canter.algorithms.ppo import PPO
    from canter.config import hp
    from canter.registry import _check_user_algorithm

    class NestedPPO(PPO):
        @dataclasses.dataclass
        class Config(PPO.Config):
            heads: list[list[int]] = hp([[32], [16, 16]], "per-head widths")
            sched: list[dict] = hp([], "schedule entries")

    _check_user_algorithm(NestedPPO, "nested_ppo")  # raises CanterError when refused
