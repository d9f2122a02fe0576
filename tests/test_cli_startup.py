"""Start-up of the ``canter`` command and of ``import canter``: a Ctrl-C while torch imports is one line
and exit code 130; help and argument errors do not import torch; the public API is imported on first use."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
#: the two ways in: the console script (pyproject's [project.scripts]) and ``python -m canter``
WAYS_IN = {"console script": ["-c", "import sys; sys.argv[0] = 'canter'; from canter.__main__ import entry; entry()"],
           "python -m canter": ["-m", "canter"]}


def _loading_torch(pid: int) -> bool:
    """True once process ``pid`` has mapped torch's shared library (it is inside ``import torch``)."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return "libtorch" in f.read()
    except OSError:  # not started yet, or gone
        return False


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs /proc/PID/maps to see torch load")
@pytest.mark.parametrize("way_in", list(WAYS_IN))
def test_ctrl_c_while_torch_imports_is_one_line_and_exit_130(way_in):
    """A Ctrl-C in the first second of `canter list`, while torch imported, printed a KeyboardInterrupt
    traceback (torch was imported by `import canter`, before the command's Ctrl-C handling). `canter list`
    no longer imports torch: `canter eval` does, to load the run, before it finds there is none."""
    proc = subprocess.Popen([sys.executable, *WAYS_IN[way_in], "eval", "no-such-run"], env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not _loading_torch(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert proc.poll() is None, "the command ended before torch was seen loading"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.splitlines() == ["interrupted"], err


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


def test_list_and_algorithm_help_do_not_import_torch():
    """`canter list` and `canter train ALGO --help` imported canter's algorithms (torch with them, ~1 s of a
    ~1.2 s command) to list them and read their hyperparameters; canter/builtins.json says it now. An unknown
    name gets its close matches without torch too."""
    cases = [["list"], ["train", "ppo", "--help"], ["train", "dqn", "--help"],
             ["train", "--lr", "0.1", "PPO", "-h"], ["train", "ppoo", "--help"], ["train", "nope", "--env", "CartPole-v1"]]
    code = ("import contextlib, io\nfrom canter.cli import main\nout = io.StringIO()\n"
            "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):\n"
            f"    for argv in {cases!r}:\n"
            "        try:\n            main(argv)\n        except SystemExit:\n            pass\n"
            "assert 'presets:' in out.getvalue() and 'TD3 hyperparameters' not in out.getvalue(), out.getvalue()\n"
            "assert out.getvalue().count('PPO hyperparameters') == 2 and 'DQN hyperparameters' in out.getvalue()\n"
            "assert \"did you mean 'ppo' or 'appo' or 'mappo'?\" in out.getvalue() and \"'nope'; did\" in out.getvalue()")
    assert "torch" not in _modules_after(code)


def test_algorithm_help_with_an_env_does_not_import_torch():
    """`canter train ppo --help --env CartPole-v1` imported the algorithm (and torch: 1.4 s against 0.2 s without
    --env) to show the values the env's preset sets; they are now read from the preset files, Atari's shared one
    included, and shown as before."""
    cases = [["train", "ppo", "--help", "--env", "CartPole-v1"], ["train", "qrdqn", "-h", "--env", "ALE/Pong-v5"]]
    code = ("import contextlib, io\nfrom canter.cli import main\nout = io.StringIO()\n"
            "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):\n"
            f"    for argv in {cases!r}:\n"
            "        try:\n            main(argv)\n        except SystemExit:\n            pass\n"
            "text = ' '.join(out.getvalue().split())\n"
            "assert '(with --env CartPole-v1: 16)' in text and '(default: 10; with --env CartPole-v1: 10)' not in text\n"
            "assert '(default: 0.0003; with --env CartPole-v1: 0.00166)' in text, text\n"
            "assert 'with --env ALE/Pong-v5: 5e-05' in text and '(with --env ALE/Pong-v5: 10000000)' in text, text")
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


def test_ctrl_c_while_torch_imports_numpy_is_not_swallowed():
    """torch's extension imports NumPy while it initialises and clears any error that import raises: a Ctrl-C
    landing inside it was swallowed, the command went on with a half-imported NumPy and failed later with a
    traceback ('module numpy has no attribute matrix' in a resumed run's first step, or 'cannot load module
    more than once'). NumPy is imported first, on its own, so the Ctrl-C is one line and exit code 130."""
    hook = ("import sys, importlib.abc\n"
            "class CtrlC(importlib.abc.MetaPathFinder):\n"
            "    fired = False\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'numpy.matrixlib' and not CtrlC.fired:  # a Ctrl-C while NumPy imports\n"
            "            CtrlC.fired = True\n"
            "            raise KeyboardInterrupt\n"
            "sys.meta_path.insert(0, CtrlC())\n"
            "sys.argv = ['canter', 'eval', 'no-such-run']\n"
            "from canter.__main__ import entry\nentry()\n")
    out = subprocess.run([sys.executable, "-c", hook], env=ENV, capture_output=True, text=True, timeout=60)
    assert out.returncode == 130, out.stderr
    assert "Traceback" not in out.stderr and out.stderr.splitlines() == ["interrupted"], out.stderr


def test_a_terminal_that_cannot_encode_a_character_gets_an_escape_not_a_traceback(monkeypatch):
    """PYTHONIOENCODING=ascii: canter eval's '480.00 ± 5.00' raised UnicodeEncodeError after the evaluation ran."""
    import io

    from canter.cli import main

    raw = io.BytesIO()
    ascii_out = io.TextIOWrapper(raw, encoding="ascii")
    monkeypatch.setattr(sys, "stdout", ascii_out)
    assert main(["--version"]) == 0
    print("480.00 ± 5.00")
    ascii_out.flush()
    assert raw.getvalue().decode().endswith("480.00 \\xb1 5.00\n")
