"""A registry kind that is none of canter's (``"algorithms"``, plural, as a new user writes it) is one line naming the
closest kind: ``canter.names`` and ``canter.lookup`` raised a bare ``KeyError: 'algorithms'``."""
from __future__ import annotations

import pytest

import canter


@pytest.mark.parametrize("call", [lambda: canter.names("algorithms"), lambda: canter.lookup("algorithms", "ppo")],
                         ids=["names", "lookup"])
def test_a_plural_kind_names_the_kind(call):
    with pytest.raises(canter.CanterError, match=r"unknown registry kind 'algorithms'; did you mean 'algorithm'\? "
                                                 r"\(kinds: algorithm, model, agent, env, encoder\)"):
        call()


def test_register_under_an_unknown_kind_names_the_closest_too():
    with pytest.raises(ValueError, match="unknown registry kind 'modle'; did you mean 'model'"):
        canter.register("modle", "x")


def test_an_unknown_kind_that_looks_like_none():
    with pytest.raises(canter.CanterError, match=r"unknown registry kind 'policy' \(kinds: "):
        canter.names("policy")
    with pytest.raises(canter.CanterError, match=r"unknown registry kind 3 \(kinds: "):
        canter.names(3)


def test_the_kinds_still_answer():
    assert "ppo" in canter.names("algorithm") and canter.lookup("model", "mlp_q").__name__ == "QNetwork"
