"""The console progress display: a live bar on a terminal, whole plain lines elsewhere, rates and clocks
of resumed runs, the final line."""

import pytest


@pytest.fixture(autouse=True)
def _a_terminal_that_redraws(monkeypatch):
    """``force_terminal=True`` below stands for a terminal with a live bar, which a TERM=dumb shell running the
    tests is not (its consoles get plain lines: test_a_dumb_terminal_gets_whole_plain_lines)."""
    monkeypatch.setenv("TERM", "xterm")


def _records():
    from canter.trainers import EvalResult, TrainRecord

    yield TrainRecord(step=4096, iteration=1, wall_time=1.0, steps_per_second=5000.0, rolling_return=20.0,
                      losses={"value_loss": 0.5, "entropy": 0.6})
    yield TrainRecord(step=8192, iteration=2, wall_time=2.0, steps_per_second=700.0, rolling_return=40.0,
                      evaluation=EvalResult(480.0, 5.0, [475.0, 485.0], [475, 485]), new_best=True,
                      losses={"value_loss": 0.25}, done=True, stop_reason="target_reward")


def test_console_logger_writes_whole_plain_lines_when_not_a_terminal():
    """Piped to a file or CI log, a live bar would be printed once and cut to 80 columns: whole lines instead."""
    import io

    from rich.console import Console

    from canter.logging.console import ConsoleLogger

    out = io.StringIO()
    logger = ConsoleLogger(100_000, "ppo CartPole-v1", console=Console(file=out, width=80), plain_seconds=0.0)
    logger.start(None)
    for record in _records():
        logger.log(record)
    logger.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3, lines
    assert lines[0].endswith("ppo CartPole-v1: 4,096/100,000 steps, " + lines[0].split("steps, ")[1])
    assert "return 20.0, eval -, value_loss 0.5 entropy 0.6" in lines[0] and len(lines[0]) > 80
    assert lines[1].endswith("step 8,192: eval return 480.00 ± 5.00 over 2 episodes (new best)")
    assert "8,192/100,000 steps" in lines[2] and "eval 480.0" in lines[2] and "…" not in out.getvalue()

    out = io.StringIO()  # a run that ends on a whole iteration past its budget says how many steps it took
    logger = ConsoleLogger(8_000, "ppo CartPole-v1", console=Console(file=out, width=80), plain_seconds=0.0)
    logger.start(None)
    for record in _records():
        logger.log(record)
    logger.close()
    assert "8,192/8,000 steps" in out.getvalue().splitlines()[-1]  # it said 8,000/8,000


def test_plain_console_writes_status_lines_between_frequent_evaluations(monkeypatch):
    """The status line comes every plain_seconds even when evaluations come more often (each evaluation
    used to restart its timer, so a run evaluating every 5 s never printed one before its end)."""
    import io

    from rich.console import Console

    import canter.logging.console as console_mod
    from canter.logging.console import ConsoleLogger
    from canter.trainers import EvalResult, TrainRecord

    clock = [0.0]
    monkeypatch.setattr(console_mod.time, "monotonic", lambda: clock[0])
    out = io.StringIO()
    logger = ConsoleLogger(1_000_000, "ppo", console=Console(file=out, width=200), plain_seconds=10.0)
    logger.start(None)
    for i in range(1, 61):  # a record each second, an evaluation every 5 s
        clock[0] = float(i)
        ev = EvalResult(1.0, 0.0, [1.0], [1]) if i % 5 == 0 else None
        logger.log(TrainRecord(step=1000 * i, iteration=i, wall_time=float(i), steps_per_second=1000.0,
                               rolling_return=1.0, evaluation=ev))
    status = [line for line in out.getvalue().splitlines() if "steps/s" in line]
    assert len(status) == 6, out.getvalue()
    assert all("1,000 steps/s" in line for line in status)


def test_plain_console_counts_a_resumed_runs_rate_from_its_checkpoint_step():
    import io
    import time
    from types import SimpleNamespace

    from rich.console import Console

    from canter.logging.console import ConsoleLogger
    from canter.trainers.base import TrainRecord

    out = io.StringIO()
    logger = ConsoleLogger(100_000, "ppo", console=Console(file=out, width=200), plain_seconds=0.0)
    logger.start(SimpleNamespace(resumed_step=50_000))
    time.sleep(0.2)
    logger.log(TrainRecord(step=50_100, iteration=1, wall_time=0.2, steps_per_second=500.0, done=True))
    rate = int(out.getvalue().split(" steps, avg ")[1].split(" steps/s")[0].replace(",", ""))
    assert rate <= 100 / 0.2  # 100 steps in this process, not 50,100


@pytest.mark.parametrize("terminal", [False, True])
def test_a_resumed_run_shows_its_last_evaluation_until_the_next(terminal):
    """A resumed run's status line and live bar read 'eval -' (no evaluation yet) until its next evaluation,
    eval_every steps later, though the run had evaluated before its checkpoint (found by resuming a PPO
    CartPole run under script(1)); they now show the checkpoint's last evaluation until a new one comes."""
    import io
    import re
    from types import SimpleNamespace

    from rich.console import Console

    from canter.logging.console import ConsoleLogger
    from canter.trainers import EvalResult, TrainRecord

    out = io.StringIO()
    logger = ConsoleLogger(100_000, "ppo", console=Console(file=out, width=200, force_terminal=terminal),
                           plain_seconds=0.0)
    added: list = []
    trainer = SimpleNamespace(evaluates=True, last_eval=None, hooks=SimpleNamespace(add=added.append))
    logger.start(SimpleNamespace(trainer=trainer, resumed_step=50_000, resumed_wall=10.0))
    # the trainer restores its state when its generator starts, after the loggers started
    trainer.last_eval = EvalResult(451.5, 3.0, [448.5, 454.5], [448, 454])
    for callback in added:
        callback.on_train_start(trainer)
    logger.log(TrainRecord(step=50_100, iteration=1, wall_time=10.2, steps_per_second=500.0, done=True))
    logger.close()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    status = text.replace("\r", "\n").strip().splitlines()[-1]  # the line (or bar) after the first record
    assert "eval 451.5" in status, text


def test_console_logger_shows_a_live_bar_on_a_terminal():
    import io

    from rich.console import Console

    from canter.logging.console import ConsoleLogger

    out = io.StringIO()
    logger = ConsoleLogger(100_000, "ppo", console=Console(file=out, width=200, force_terminal=True))
    logger.start(None)
    assert logger.progress is not None
    for record in _records():
        logger.log(record)
    logger.close()
    import re

    raw = out.getvalue()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw)
    assert "\x1b[" in raw and "8,192 steps avg 4,096 steps/s" in text and "eval return 480.00 ± 5.00" in text


def test_a_resumed_runs_live_bar_clock_goes_on():
    """The live bar's elapsed time started at 0:00:00 on a resumed run (the plain lines went on from its
    training seconds)."""
    import io
    import re
    from types import SimpleNamespace

    from rich.console import Console

    from canter.logging.console import ConsoleLogger
    from canter.trainers.base import TrainRecord

    out = io.StringIO()
    logger = ConsoleLogger(100_000, "ppo", console=Console(file=out, width=200, force_terminal=True))
    logger.start(SimpleNamespace(resumed_wall=125.0, resumed_step=50_000))
    logger.log(TrainRecord(step=50_100, iteration=1, wall_time=125.2, steps_per_second=500.0, done=True))
    logger.close()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert text.strip().splitlines()[-1].endswith("0:02:05")


def test_the_live_bar_gives_the_steps_taken_past_the_budget():
    """A run ends on a whole iteration: the bar said 8,000 steps for a run of 8,192 (the plain lines said
    8,192/8,000); a resumed run's bar starts at its checkpoint's step, not 0."""
    import io
    import re
    from types import SimpleNamespace

    from rich.console import Console

    from canter.logging.console import ConsoleLogger

    out = io.StringIO()
    logger = ConsoleLogger(8_000, "ppo", console=Console(file=out, width=200, force_terminal=True))
    logger.start(None)
    for record in _records():
        logger.log(record)
    logger.close()
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert "8,192 steps avg 4,096 steps/s" in text.strip().splitlines()[-1]
    logger = ConsoleLogger(8_000, "ppo", console=Console(file=io.StringIO(), width=200, force_terminal=True))
    logger.start(SimpleNamespace(resumed_step=4096, resumed_wall=1.0))
    assert logger.progress.tasks[0].completed == 4096 and logger.progress.tasks[0].fields["steps"] == "4,096"
    logger.close()


@pytest.mark.parametrize("terminal", [True, False])
def test_the_final_progress_line_gives_the_runs_average_steps_per_second(terminal):
    """The last line showed the last iteration's rate (100 steps/s for an iteration slowed by its evaluation)
    as the run's; it now gives the average, 3,000 steps in 12 s. Live lines keep the recent rate."""
    import io
    import re

    from rich.console import Console

    from canter.logging.console import ConsoleLogger
    from canter.trainers.base import TrainRecord

    out = io.StringIO()
    logger = ConsoleLogger(3000, "ppo", console=Console(file=out, width=200, force_terminal=terminal),
                           refresh_seconds=0, plain_seconds=0)
    logger.start(None)
    logger.log(TrainRecord(step=1000, iteration=1, wall_time=1.0, steps_per_second=1000.0))
    if logger.progress is not None:
        logger.progress.refresh()  # drawn now, not by rich's refresh thread later
    live = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    logger.log(TrainRecord(step=3000, iteration=2, wall_time=12.0, steps_per_second=100.0, done=True))
    logger.close()
    assert "avg" not in live and (" 1,000 steps/s" in live or not terminal)  # plain: the rate since the last line
    assert "avg 250 steps/s" in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue()).strip().splitlines()[-1]


def test_a_dumb_terminal_gets_whole_plain_lines(monkeypatch):
    """TERM=dumb (Emacs' shell, some CI ptys): a terminal that cannot move the cursor, where rich draws a live bar
    only once, at the end, cut to 80 columns ('ppo Cart… 20,480… avg 4,883 …', measured under `script`), and the
    evaluation lines wrapped with rich's 'console.py:95' log path. It now gets the plain lines a pipe gets."""
    import io

    from rich.console import Console

    from canter.logging.console import ConsoleLogger

    monkeypatch.setenv("TERM", "dumb")
    out = io.StringIO()
    logger = ConsoleLogger(100_000, "ppo CartPole-v1", console=Console(file=out, width=80, force_terminal=True),
                           plain_seconds=0.0)
    logger.start(None)
    for record in _records():
        logger.log(record)
    logger.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and "ppo CartPole-v1: 4,096/100,000 steps" in lines[0], lines
    assert lines[1].endswith("step 8,192: eval return 480.00 ± 5.00 over 2 episodes (new best)")
    assert "…" not in out.getvalue() and "console.py" not in out.getvalue()


def test_an_evaluation_of_one_episode_is_one_episode_not_one_episodes(capsys):
    """'over 1 episodes' in the evaluation line of canter train (--eval-episodes 1) and in canter eval's."""
    import io

    from rich.console import Console

    from canter.logging.console import ConsoleLogger
    from canter.trainers import EvalResult, TrainRecord

    out = io.StringIO()
    logger = ConsoleLogger(1000, "ppo", console=Console(file=out, width=200), plain_seconds=0.0)
    logger.start(None)
    logger.log(TrainRecord(step=512, iteration=1, wall_time=1.0, steps_per_second=500.0,
                           evaluation=EvalResult(453.0, 0.0, [453.0], [453])))
    logger.close()
    assert "step 512: eval return 453.00 ± 0.00 over 1 episode\n" in out.getvalue()
    result = EvalResult(0.5, 0.5, [0.0, 1.0], [3, 4], successes=[0.0, 1.0])
    assert result.describe() == "0.50 ± 0.50 over 2 episodes, success rate 50%"


def test_the_status_line_shows_an_actor_critic_algorithms_critic_loss():
    """SAC, TD3, DDPG and TQC report critic_loss / actor_loss, none of which the status line showed: their
    runs' lines ended at 'eval -1266.3' with no loss at all (PPO's show value_loss and entropy)."""
    import io

    from rich.console import Console

    from canter.logging.console import ConsoleLogger
    from canter.trainers import TrainRecord

    out = io.StringIO()
    logger = ConsoleLogger(1000, "sac", console=Console(file=out, width=200), plain_seconds=0.0)
    logger.start(None)
    logger.log(TrainRecord(step=500, iteration=1, wall_time=1.0, steps_per_second=500.0,
                           losses={"ent_coef": 0.9, "ent_coef_loss": -0.1, "critic_loss": 12.5, "actor_loss": 3.25}))
    logger.close()
    assert out.getvalue().rstrip().endswith("eval -, critic_loss 12.5")


def test_the_status_line_shows_each_policys_losses_in_a_multi_policy_run():
    """A multi-policy run logs 'policy/name' keys (speaker/value_loss): its status line showed no loss at all."""
    import io

    from rich.console import Console

    from canter.logging.console import ConsoleLogger
    from canter.trainers import TrainRecord

    out = io.StringIO()
    logger = ConsoleLogger(1000, "mappo", console=Console(file=out, width=300), plain_seconds=0.0)
    logger.start(None)
    logger.log(TrainRecord(step=500, iteration=1, wall_time=1.0, steps_per_second=500.0,
                           losses={"speaker/entropy": 1.5, "speaker/value_loss": 0.25, "speaker/clip_fraction": 0.1,
                                   "listener/value_loss": 2.0}))
    logger.close()
    assert out.getvalue().rstrip().endswith(
        "eval -, speaker/value_loss 0.25 speaker/entropy 1.5 listener/value_loss 2")


@pytest.mark.parametrize("errno_", [32, 9, 5])  # EPIPE, EBADF, EIO
def test_a_stderr_gone_silences_the_logger_without_ending_the_run(monkeypatch, errno_):
    """rich's answer to a broken pipe (``canter train ... | tee log`` whose tee a Ctrl-C or a closed terminal ended)
    was SystemExit(1) out of the progress line, after pointing *stdout* at /dev/null: a run stopped by that Ctrl-C
    exited 1 instead of 130 (found running the docs' commands as ``... | tail`` under ``kill -TERM -PGID``), and a
    ``nohup`` run lost its stdout and ended. The logger's console goes quiet instead and the run goes on. So it does
    where stderr was closed before the process started (``canter train ... 2>&-``: EBADF) or its terminal is gone
    (EIO): the OSError stopped the run at its first evaluation line (step 10,240 of 60,000, exit 1)."""
    import io
    import os
    import sys

    from canter.logging.console import ConsoleLogger

    class Gone(io.TextIOBase):
        def write(self, text):
            raise (BrokenPipeError if errno_ == 32 else OSError)(errno_, os.strerror(errno_))

    dups = []
    monkeypatch.setattr(os, "dup2", lambda *a: dups.append(a))
    monkeypatch.setattr(sys, "stderr", Gone())
    logger = ConsoleLogger(100_000, "ppo CartPole-v1", plain_seconds=0.0)
    logger.start(None)
    for record in _records():
        logger.log(record)
    logger.close()
    assert logger.console.quiet and dups == []


def test_an_evaluation_line_on_a_terminal_names_no_source_file(monkeypatch, capsys):
    """On a terminal each evaluation line above the live bar ended with rich's log path, canter's own source
    position ('console.py:116'), which says nothing to the user (seen under script(1))."""
    from canter.logging.console import ConsoleLogger

    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("TTY_INTERACTIVE", "1")
    logger = ConsoleLogger(100_000, "ppo")
    logger.start(None)
    assert logger.progress is not None  # a live bar: the terminal's case
    for record in _records():
        logger.log(record)
    logger.close()
    import re

    err = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", capsys.readouterr().err)
    assert "eval return 480.00" in err and "console.py" not in err, err
