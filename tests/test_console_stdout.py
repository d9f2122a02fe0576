"""Where prints go while the live progress display runs on stderr."""
from __future__ import annotations

import io

import pytest


@pytest.fixture(autouse=True)
def _a_terminal_that_redraws(monkeypatch):
    """``force_terminal=True`` below stands for a terminal with a live bar (a TERM=dumb shell gets plain lines)."""
    monkeypatch.setenv("TERM", "xterm")


def test_prints_go_to_a_stdout_that_is_not_the_terminal(monkeypatch):
    """rich's live display took every print into its console on stderr: `canter train ... > out.txt` with a hook
    that prints showed its lines in the terminal, and out.txt had only the final line. A stdout that is a file or a
    pipe now gets them; on a terminal (stdout too) rich still takes them above the bar."""
    import sys

    from rich.console import Console

    from canter.logging.console import ConsoleLogger

    stdout = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout)
    err = io.StringIO()
    logger = ConsoleLogger(3000, "ppo", console=Console(file=err, width=120, force_terminal=True))
    logger.start(None)
    print("HOOK step 512")
    logger.close()
    assert stdout.getvalue() == "HOOK step 512\n" and "HOOK" not in err.getvalue()
