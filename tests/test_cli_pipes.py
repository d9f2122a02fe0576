"""A BrokenPipeError ends the CLI quietly with exit 0 only when standard output is the pipe that broke
(``canter list | head -1``). Before, any BrokenPipeError did: an env whose simulator connection closed,
or an async vector env closed after its workers died, ended a run with exit 0 and no message."""
from __future__ import annotations

import io
import os
import sys

import pytest

from canter import cli
from canter.utils import stdout_gone


@pytest.fixture
def stdout_pipe(monkeypatch):
    """Returns ``use()``, which makes sys.stdout the writing end of a real pipe (inside the test: pytest's
    capture sets sys.stdout again after the fixtures) and returns the reading end's fd."""
    opened = []

    def use() -> int:
        read_fd, write_fd = os.pipe()
        stream = os.fdopen(write_fd, "w")
        opened.append((read_fd, stream))
        monkeypatch.setattr(sys, "stdout", stream)
        return read_fd

    yield use
    for read_fd, stream in opened:
        stream.close()
        try:
            os.close(read_fd)
        except OSError:  # closed by the test
            pass


def _broken_pipe(argv):
    raise BrokenPipeError(32, "Broken pipe")  # as a socket to an env's simulator that closed


def test_stdout_gone_only_for_a_pipe_whose_reader_closed(stdout_pipe, monkeypatch):
    read_fd = stdout_pipe()
    assert not stdout_gone()
    os.close(read_fd)
    assert stdout_gone()
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert not stdout_gone()


def test_a_broken_pipe_that_is_not_stdout_is_raised(stdout_pipe, monkeypatch):
    stdout_pipe()
    monkeypatch.setitem(cli.COMMANDS, "list", _broken_pipe)
    with pytest.raises(BrokenPipeError):
        cli.main(["list"])


def test_a_closed_stdout_pipe_still_exits_0(stdout_pipe, monkeypatch):
    monkeypatch.setitem(cli.COMMANDS, "list", _broken_pipe)
    os.close(stdout_pipe())
    assert cli.main(["list"]) == 0


@pytest.mark.parametrize("closed", [1, 2])
def test_a_standard_stream_closed_before_the_command_started_is_no_error(closed):
    """`canter --help >&-` (stdout closed when the process started, as by a daemon or `>&-`: Python's sys.stdout is
    None) exited 1 with AttributeError 'NoneType' object has no attribute 'flush' from the command's exit, whatever
    the command had done (a whole training run too)."""
    import subprocess

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-m", "canter", "--help"], preexec_fn=lambda: os.close(closed), env=env,
                          stdout=subprocess.PIPE if closed == 2 else None, stderr=subprocess.PIPE if closed == 1 else None,
                          timeout=60)
    assert done.returncode == 0, (done.stderr or b"").decode()


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_the_usage_and_version_lines_into_a_closed_pipe_exit_0(monkeypatch, flag):
    """`canter --help | head -1` was a BrokenPipeError traceback and exit 1 when head had gone before the usage's
    later lines were written: the top-level usage and version lines were printed outside the handler."""
    read_fd, write_fd = os.pipe()
    os.close(read_fd)
    stream = os.fdopen(write_fd, "w", buffering=1)  # line-buffered, as the race with head makes it: each line written
    monkeypatch.setattr(sys, "stdout", stream)
    try:
        assert cli.main([flag]) == 0
    finally:
        stream.close()
