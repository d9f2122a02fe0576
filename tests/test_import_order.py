"""A canter module imports on its own, first, in a fresh interpreter: no import cycle depends on which canter
module a user imports first."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


@pytest.mark.parametrize("module", ["canter.stop_criteria", "canter.callbacks"])
def test_module_imports_first(module: str) -> None:
    """``import canter.stop_criteria`` alone failed with a circular ImportError: canter.callbacks, which it
    imports for ``Callback``, re-exported its names with an import at its end."""
    code = (f"import {module}\nfrom canter.callbacks import EarlyStopping, PlateauLR\n"
            "from canter.stop_criteria import PlateauLR as P\nassert P is PlateauLR\nprint(EarlyStopping.__module__)")
    out = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "canter.stop_criteria"


def test_callbacks_unknown_name() -> None:
    """An unknown attribute of canter.callbacks is still an AttributeError."""
    import canter.callbacks

    with pytest.raises(AttributeError):
        canter.callbacks.NoSuchCallback  # noqa: B018


def test_a_mistyped_stop_criterion_of_callbacks_is_suggested() -> None:
    """The lazily re-exported names are in ``dir(canter.callbacks)``, which the unknown-name error's
    suggestion reads: ``canter.callbacks:EarlyStoping`` said '23 choices', not "did you mean 'EarlyStopping'?"."""
    import canter.callbacks
    from canter.errors import CanterError
    from canter.registry import import_object

    assert {"EarlyStopping", "TargetReward", "Callback"} <= set(dir(canter.callbacks))
    with pytest.raises(CanterError, match="did you mean 'EarlyStopping'"):
        import_object("canter.callbacks:EarlyStoping")
