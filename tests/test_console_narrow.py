"""The live progress display in a terminal too narrow for its one line (80 columns, COLUMNS=40): its status
kept whole on more lines, not cut column by column."""
from __future__ import annotations

import io
import re

import pytest

from rich.cells import cell_len


@pytest.fixture(autouse=True)
def _a_terminal_that_redraws(monkeypatch):
    """``force_terminal=True`` below stands for a terminal with a live bar (a TERM=dumb shell gets plain lines)."""
    monkeypatch.setenv("TERM", "xterm")


def _final_display(width: int, losses: dict[str, float], description: str = "ppo CartPole-v1") -> list[str]:
    """The lines the live display leaves on a terminal ``width`` columns wide after a run's last record."""
    from rich.console import Console

    from canter.logging.console import ConsoleLogger
    from canter.trainers import EvalResult, TrainRecord

    out = io.StringIO()
    logger = ConsoleLogger(3000, description, console=Console(file=out, width=width, force_terminal=True))
    logger.start(None)
    logger.log(TrainRecord(step=3072, iteration=6, wall_time=64.0, steps_per_second=5000.0, rolling_return=28.8,
                           best_rolling_return=28.8, evaluation=EvalResult(146.0, 0.0, [146.0], [146]),
                           losses=losses, done=True))
    logger.close()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    last = text.split("\r")[-1]  # the display's last drawing, after the cursor went back to redraw it
    return [line for line in last.splitlines() if line.strip()]


@pytest.mark.parametrize("width", [80, 40])
def test_a_narrow_terminal_gets_the_whole_status_on_more_lines(width):
    """In an 80-column terminal a CartPole PPO run's last line read 'ppo CartP… 3,072… avg 5,193 s… return 28.8
    (best… eva… value_loss 60.1 entropy…' (under script(1): the bar, the clock and the evaluation cut away), at
    COLUMNS=40 'ppo…  avg 2… return 21.5… value_loss 1…'. Each piece is now whole, on lines that fit."""
    lines = _final_display(width, {"value_loss": 60.1, "entropy": 0.617})
    text = "\n".join(lines)
    assert "…" not in text, text
    assert all(cell_len(line) <= width for line in lines), text
    for piece in ("ppo CartPole-v1", "3,072 steps", "avg 48 steps/s", "return 28.8 (best 28.8)", "eval 146.0",
                  "value_loss 60.1", "entropy 0.617", "0:00:0"):
        assert any(piece in line for line in lines), (piece, text)
    assert "━" in lines[0]  # the bar


def test_a_multi_policy_runs_statistics_each_stay_whole():
    """A run of several policies shows four statistics or more: each one whole on a line of the terminal's width,
    and a description wider than the terminal is folded, not cut."""
    losses = {f"{p}/{k}": 1.5 for p in ("listener", "speaker") for k in ("value_loss", "entropy")}
    lines = _final_display(40, losses, description="ppo pettingzoo:tests.mixed_agents")
    text = "\n".join(lines)
    assert "…" not in text and all(cell_len(line) <= 40 for line in lines), text
    for k in losses:
        assert any(f"{k} 1.5" in line for line in lines), (k, text)
    assert "mixed_agents" in text


def test_a_wide_terminal_keeps_one_line():
    lines = _final_display(200, {"value_loss": 60.1})
    assert len(lines) == 1 and "3,072 steps avg 48 steps/s return 28.8 (best 28.8) eval 146.0" in lines[0], lines

