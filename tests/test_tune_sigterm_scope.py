"""tune turns a trial's ``SystemExit`` into a Ctrl-C only when a SIGTERM stopped that trial: the SIGTERMs that
:mod:`canter.distributed.cluster` noted were module-level and cleared only when Ray next started, so after one run in
a process was stopped by a SIGTERM, any later trial's ``SystemExit`` (a ``sys.exit(3)`` of its own) was taken for one."""
from __future__ import annotations

import os
import signal
import sys

import pytest

from canter.distributed import cluster
from canter.tools.tune_workers import INTERRUPTS, trial_signals


@pytest.fixture
def sigterm_stopped_run():
    """A run in this process stopped by a SIGTERM taken by the handler canter puts back after ``ray.init``."""
    before = signal.getsignal(signal.SIGTERM)
    INTERRUPTS.pending = False  # a study's start clears it (tune_workers); an earlier test's direct use may not have
    try:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))  # as ray.init's
        cluster._python_sigterm_handler()
        with pytest.raises(SystemExit):
            os.kill(os.getpid(), signal.SIGTERM)
        yield
    finally:
        signal.signal(signal.SIGTERM, before)
        INTERRUPTS.pending = False


def test_a_later_trials_own_system_exit_stays_a_system_exit(sigterm_stopped_run):
    try:
        with trial_signals():
            raise SystemExit(3)
    except KeyboardInterrupt:
        pytest.fail("the trial's SystemExit(3) was taken for a SIGTERM of an earlier run: a Ctrl-C")
    except SystemExit as exc:
        assert exc.code == 3
    assert not INTERRUPTS.pending


def test_a_sigterm_during_the_trial_that_ray_made_exit_code_1_is_a_ctrl_c(sigterm_stopped_run):
    with pytest.raises(KeyboardInterrupt):
        with trial_signals():
            signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))  # the trial's ray.init
            cluster._python_sigterm_handler()
            try:
                os.kill(os.getpid(), signal.SIGTERM)
            except SystemExit:
                raise SystemExit(1) from None  # as Ray turns it while it waits
    assert INTERRUPTS.pending
