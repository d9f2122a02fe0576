"""Start-up of the ``canter`` command and of ``import canter``: help and argument errors do not import
torch; the public API is imported on first use."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


def _modules_after(code: str) -> set[str]:
    """The top-level modules that a fresh interpreter has imported after running ``code``."""
    out = subprocess.run([sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sys.modules))"],
                         env=ENV, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "canter" in out.stdout.split(), out.stderr
    return {m.split(".")[0] for m in out.stdout.split()}


def test_help_and_argument_errors_do_not_import_torch():
    """`canter --help`, `canter train --help` and argument errors answered after importing everything."""
    cases = [["--help"], ["-V"], ["nope"], ["train", "--help"], ["train", "--env", "CartPole-v1"], ["eval"],
             ["eval", "RUN", "--episodes", "0"], ["tune", "--help"]]
    code = ("import contextlib, io\nfrom canter.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
            f"    for argv in {cases!r}:\n"
            "        try:\n            main(argv)\n        except SystemExit:\n            pass")
    assert "torch" not in _modules_after(code)


def test_import_canter_is_lazy_and_the_public_api_is_whole():
    """``import canter`` imports no torch; every name of ``__all__`` and the subpackages that importing
    canter used to bring along (``canter.envs``) are there on first use."""
    assert "torch" not in _modules_after("import canter")
    import canter

    for name in canter.__all__:
        assert getattr(canter, name) is not None, name
    from canter import load, make_trainer, register  # noqa: F401

    assert canter.envs.make_vec_env and canter.api.find_checkpoint and set(canter.__all__) <= set(dir(canter))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        canter.nope
