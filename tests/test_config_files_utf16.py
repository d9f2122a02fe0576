"""A config file in UTF-16 (PowerShell's '>' writes it, with a byte order mark) is read; one without the mark is
refused naming UTF-16 and how to re-save it."""

from __future__ import annotations

import pytest

from canter.errors import CanterError
from canter.yaml_io import load_yaml

TEXT = "algo: dqn\nseed: 3\nhparams:\n  net_arch: [32, 32]\n"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be"])
def test_a_utf16_config_with_a_byte_order_mark_is_read(tmp_path, encoding):
    """It was 'is not UTF-8 text', without a word of why."""
    f = tmp_path / "run.yaml"
    f.write_bytes(("\ufeff" if encoding == "utf-16-be" else "").encode(encoding) + TEXT.encode(encoding))
    assert load_yaml(f) == {"algo": "dqn", "seed": 3, "hparams": {"net_arch": [32, 32]}}


def test_utf16_without_a_byte_order_mark_is_named(tmp_path):
    f = tmp_path / "run.yaml"
    f.write_bytes(TEXT.encode("utf-16-le"))  # was "malformed YAML ...: unacceptable character #x0000"
    with pytest.raises(CanterError, match="looks like UTF-16 without a byte order mark: re-save it as UTF-8"):
        load_yaml(f)


def test_other_bytes_that_are_not_utf8_are_refused_as_before(tmp_path):
    f = tmp_path / "run.yaml"
    f.write_bytes(b"algo: dqn\nenv: \xe9t\xe9\n")
    with pytest.raises(CanterError, match=r"is not UTF-8 text$"):
        load_yaml(f)
