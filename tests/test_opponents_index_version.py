"""A run's opponents index (``RUN/opponents/opponents.json``) of a newer format version is refused in one line, as a
checkpoint's ``format_version`` is: it was read as this canter's layout."""
from __future__ import annotations

import json

import pytest

from canter.envs.opponents import INDEX_NAME, SNAPSHOT_DIR, read_index
from canter.errors import CanterError


def _index(run, version):
    folder = run / SNAPSHOT_DIR
    folder.mkdir(parents=True)
    index = {"format": "canter-opponents", "opponents": {"runs/opp": {"file": "opp-best", "checkpoint_id": "ab"}}}
    if version is not None:
        index["version"] = version
    (folder / INDEX_NAME).write_text(json.dumps(index))


@pytest.mark.parametrize("version", [2, "1", True])
def test_an_index_of_a_newer_or_odd_version_is_refused(tmp_path, version):
    _index(tmp_path, version)
    with pytest.raises(CanterError) as info:
        read_index(tmp_path)
    assert f"{tmp_path / SNAPSHOT_DIR / INDEX_NAME} has version {version!r}" in str(info.value)


@pytest.mark.parametrize("version", [1, None])
def test_an_index_of_this_version_or_none_reads(tmp_path, version):
    _index(tmp_path, version)
    assert read_index(tmp_path) == {"runs/opp": {"file": "opp-best", "checkpoint_id": "ab"}}


@pytest.mark.parametrize("version", ["1", True, 1.5])
def test_an_odd_version_is_not_said_to_be_a_newer_canters(tmp_path, version):
    """A version no canter writes ('1', true) was answered 'written by a newer canter (pip install -U canter)'."""
    _index(tmp_path, version)
    with pytest.raises(CanterError) as info:
        read_index(tmp_path)
    assert "newer canter" not in str(info.value) and "edited by hand" in str(info.value), str(info.value)


@pytest.mark.parametrize("version", [0, -1])
def test_an_index_of_version_zero_or_below_is_refused(tmp_path, version):
    """Version 0 or -1 (no canter writes one) was read as this canter's layout: only a version above 1 was checked."""
    _index(tmp_path, version)
    with pytest.raises(CanterError) as info:
        read_index(tmp_path)
    message = str(info.value)
    assert f"has version {version}; versions start at 1" in message and "newer canter" not in message, message
