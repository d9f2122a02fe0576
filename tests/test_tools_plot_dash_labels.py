"""``canter plot --label`` values that start with '-': argparse took ``--label -x`` for an option ("argument --label:
expected at least one argument") and ``--label base -tuned`` for an unknown one ("unrecognized arguments:
-tuned"); only ``--label=-x`` worked. Each value after ``--label`` is now a label, up to an option, a token
starting with '--' (a misspelt option still gets its error) or ``--``."""
from __future__ import annotations

import pytest

from canter.cli import main


@pytest.fixture
def seen(monkeypatch):
    """The run dirs and labels canter plot passes on (nothing is read or drawn)."""
    import canter.tools.plot as plot

    calls: list[tuple[list[str], list[str] | None]] = []
    monkeypatch.setattr(plot, "plot_runs", lambda run_dirs, labels=None, **kw: calls.append((run_dirs, labels)) or "x")
    return calls


@pytest.mark.parametrize("argv, labels", [
    (["r1", "r2", "--label", "-x", "-y"], ["-x", "-y"]),
    (["r1", "r2", "--label", "base", "-tuned"], ["base", "-tuned"]),
    (["r1", "r2", "--label", "-x", "--label", "-1"], ["-x", "-1"]),
    (["r1", "r2", "--label=-x", "--label=--y"], ["-x", "--y"]),  # '--y' only as --label=--y
    (["--label", "-x", "-y", "--", "r1", "r2"], ["-x", "-y"]),
    (["r1", "r2", "--label", "-x", "y", "--x", "time"], ["-x", "y"]),
])
def test_labels_starting_with_a_dash_are_labels(seen, capsys, argv, labels):
    assert main(["plot", *argv]) == 0, capsys.readouterr().err
    assert seen == [(["r1", "r2"], labels)]


@pytest.mark.parametrize("argv, message", [
    (["r1", "--label", "a", "--ouut", "x.png"], "unrecognized arguments: --ouut x.png; did you mean '--out'?"),
    (["r1", "--label", "--out", "x.png"], "argument --label: expected at least one argument"),
    (["r1", "--label"], "argument --label: expected at least one argument"),
])
def test_options_after_label_are_still_options(seen, capsys, argv, message):
    assert main(["plot", *argv]) == 2
    assert message in capsys.readouterr().err and seen == []
