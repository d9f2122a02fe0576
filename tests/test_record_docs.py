"""The typed records a trainer yields and an evaluation returns say what each of their fields is, where
``help(TrainRecord)`` shows it: their docstrings name every field (``help`` showed a one-line docstring and the
fields' names alone; what ``wall_time``, ``rolling_return`` or ``new_best`` held was in no docstring)."""
from __future__ import annotations

import dataclasses
import pydoc
import re

import pytest

from canter.trainers.evaluation import EvalResult
from canter.trainers.records import EpisodeInfo, TrainRecord


@pytest.mark.parametrize("cls", [TrainRecord, EpisodeInfo, EvalResult], ids=lambda c: c.__name__)
def test_help_describes_every_field(cls):
    text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    described = set(re.findall(r"^\s*\|?\s*(\w+): \S", text, re.MULTILINE))
    missing = [f.name for f in dataclasses.fields(cls) if f.name not in described]
    assert not missing, f"help({cls.__name__}) does not describe {missing}"
