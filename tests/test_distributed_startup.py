"""Starting explorers, checked without a cluster: no Ray import on the default path, the missing extra,
--ray-address refused or unreachable (one line, fast), a run's private Ray kept on loopback, and a
SIGTERM or Ctrl-C while that Ray starts."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

import pytest

from canter.cli import main


def test_no_ray_import_without_explorers(tmp_path):
    code = textwrap.dedent("""
        import sys, canter
        import canter.distributed, canter.distributed.trainers, canter.distributed.pool
        canter.train("ppo", "CartPole-v1", run_dir=None, max_steps=256, n_envs=2, n_steps=64, eval_episodes=1)
        canter.train("impala", "CartPole-v1", run_dir=None, max_steps=256, n_envs=2, eval_episodes=1)
        print("ray imported:", "ray" in sys.modules)
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert "ray imported: False" in out.stdout


def test_explorers_without_ray_name_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    run_dir = tmp_path / "run"
    code = main(["train", "ppo", "--env", "CartPole-v1", "--explorers", "2", "--run-dir", str(run_dir), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert "pip install 'canter[distributed]'" in err and "--explorers" in err
    assert not run_dir.exists()


def test_ray_address_needs_explorers(capsys, tmp_path):
    code = main(["train", "ppo", "--env", "CartPole-v1", "--ray-address", "auto", "--run-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "--explorers" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("flags, message", [
    (["--explorers", "1000000000"], "'explorers' must be <= 100000, got 1000000000"),
    (["--explorers", "50000", "--n-envs", "4"], "50,000 explorers x n_envs 4 = 200,000 envs, more than the 100,000 "
                                                "one run holds; at most 25,000 explorers with n_envs 4"),
])
def test_more_envs_over_all_explorers_than_one_run_holds_are_refused_with_one_line(capsys, tmp_path, flags, message):
    """The learner keeps a return statistic per env of every explorer: --explorers 1000000000 ended in NumPy's
    ArrayMemoryError traceback (exit code 1) while the learner's Agent was built, before Ray's own checks."""
    code = main(["train", "impala", "--env", "CartPole-v1", *flags, "--run-dir", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.splitlines() == [f"canter: error: {message}"]
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("address", ["nonsense", "127.0.0.1", "host:port", ":6379"])
def test_a_malformed_ray_address_is_refused_with_one_line_before_ray_starts(capsys, tmp_path, address):
    """Before, Ray was imported and printed its token-authentication warning above the error."""
    code = main(["train", "impala", "--env", "CartPole-v1", "--explorers", "2", "--ray-address", address,
                 "--run-dir", str(tmp_path / "r"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err.splitlines() == [
        f"canter: error: 'ray_address' must be 'auto', host:port or ray://host:port, got '{address}'"]
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("scheme", ["", "ray://"])  # ray://: Ray's client timed out after 30 s, with its warning
def test_unreachable_ray_address_fails_fast_with_one_line(capsys, tmp_path, scheme):
    pytest.importorskip("ray")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    run_dir, address = tmp_path / "run", f"{scheme}127.0.0.1:{port}"
    code = main(["train", "ppo", "--env", "CartPole-v1", "--explorers", "1", "--ray-address", address,
                 "--run-dir", str(run_dir), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and f"no Ray cluster at '{address}'" in err
    assert not run_dir.exists()


def test_ray_address_auto_pointing_at_no_cluster_fails_fast_with_one_line(tmp_path):
    """``auto`` joins the cluster RAY_ADDRESS (or the last ``ray start``) names; when nothing listens there
    it fails like an explicit address. Before, Ray retried for minutes, printing its warnings (a
    subprocess: the old behaviour must not hang the test session)."""
    pytest.importorskip("ray")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    run_dir = tmp_path / "run"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "RAY_ADDRESS": f"127.0.0.1:{port}", "RAY_USAGE_STATS_ENABLED": "0",
           "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    code = "import sys; from canter.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run([sys.executable, "-c", code, "train", "ppo", "--env", "CartPole-v1", "--explorers", "1",
                           "--ray-address", "auto", "--run-dir", str(run_dir), "--quiet"],
                          env=env, capture_output=True, text=True, timeout=90)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert len(proc.stderr.splitlines()) == 1
    assert f"no Ray cluster at '127.0.0.1:{port}' (where --ray-address auto points)" in proc.stderr
    assert not run_dir.exists()


def test_private_ray_stays_on_loopback_even_when_ray_was_imported_first():
    """A run's private Ray binds to 127.0.0.1 also when the user imported ray before canter (Ray reads
    RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER at import). Checked without starting Ray: ``ray.init`` is stubbed."""
    pytest.importorskip("ray")
    script = textwrap.dedent("""
        import os
        os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
        import ray  # the user's own import, before canter connects
        from canter.distributed import cluster
        seen = {}
        ray.init = lambda **kw: seen.update(kw)
        cluster.connect(None)
        from ray._private import services
        print(services.get_node_ip_address(), services.resolve_ip_for_localhost("127.0.0.1"),
              os.environ["RAY_USAGE_STATS_ENABLED"], seen["include_dashboard"], seen["address"])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items() if not k.startswith("RAY_")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["127.0.0.1", "127.0.0.1", "0", "False", "local"]


SIGNAL_WHILE_STARTING_RAY = """
import os, signal, sys
import ray
from canter.distributed.cluster import connect

built = ray._raylet.CoreWorker

def core_worker(*args, **kwargs):  # the driver's core worker, built inside ray.init (seconds); then a signal
    worker = built(*args, **kwargs)
    os.kill(os.getpid(), getattr(signal, sys.argv[1]))
    return worker

ray._raylet.CoreWorker = core_worker
connect(None)
print("connected", flush=True)
"""


def test_a_ctrl_c_while_ray_shuts_down_is_taken_once_ray_is_down():
    """A second Ctrl-C ("quit now") that landed while a stopped run shut its private Ray down raised
    KeyboardInterrupt in the middle of ``ray.shutdown``: the run exited with 130, but Ray's dashboard and
    runtime-env agents were left running, orphaned, for 1-2 minutes (seen with ps after a double Ctrl-C)."""
    pytest.importorskip("ray")
    import signal
    import time

    from canter.distributed.cluster import disconnect

    done = []

    class ShuttingDown:  # a connected Ray whose shutdown gets a Ctrl-C halfway
        def is_initialized(self) -> bool:
            return True

        def shutdown(self) -> None:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # Python runs the handler here
            done.append("shut down")

    with pytest.raises(KeyboardInterrupt):  # still taken, once Ray is down
        disconnect(ShuttingDown(), True)
    assert done == ["shut down"]


@pytest.mark.slow  # ~10-15 s: a fresh Python process starting a private Ray
@pytest.mark.parametrize("sig, code", [("SIGTERM", 15), ("SIGINT", -2)])  # -2: an uncaught KeyboardInterrupt
def test_a_signal_while_ray_init_runs_exits_cleanly_through_python(sig, code):
    # building the core worker installed Ray's native crash handler: a SIGTERM then printed a native stack
    # trace and its 3 s alarm aborted the exit (code 134); without that handler, the SystemExit (or a
    # Ctrl-C's KeyboardInterrupt) raised inside ray.init left Ray half started and the process crashed on
    # its way out (code 139)
    pytest.importorskip("ray")
    env = {k: v for k, v in os.environ.items() if k != "RAY_DISABLE_FAILURE_SIGNAL_HANDLER"}
    env.update(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_USAGE_STATS_ENABLED="0")  # loopback, no reports
    out = subprocess.run([sys.executable, "-c", SIGNAL_WHILE_STARTING_RAY, sig], capture_output=True, text=True,
                         timeout=120, env=env)
    assert "SIGTERM received" not in out.stderr, out.stderr[-2000:]
    assert out.returncode == code and "connected" not in out.stdout, (out.returncode, out.stderr[-2000:])


SIGTERM_WHILE_EXPLORERS_ARE_BUILT = """
import os, signal, threading
from canter.distributed import pool
import canter

wait_for_explorers = pool.RayPool._get_each

def get_each(self, refs, failed):  # a SIGTERM while the pool waits for its explorers to be built
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
    return wait_for_explorers(self, refs, failed)

pool.RayPool._get_each = get_each
canter.make_trainer("impala", "flaky_env:FlakyCartPole-v0", explorers=1, n_envs=1, env_kwargs={"slow_start": 60})
print("built", flush=True)
"""


@pytest.mark.slow  # ~15-20 s: a fresh Python process starting a private Ray and an explorer
def test_a_sigterm_while_the_explorers_are_built_exits_with_code_15():
    # Ray turns the SystemExit(15) raised while ray.get waits into SystemExit(1): the run ended with exit
    # code 1 and no message, as a failure, where a SIGTERM a moment earlier or later gave 15
    pytest.importorskip("ray")
    tests = os.path.dirname(__file__)
    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0",
           "PYTHONPATH": os.pathsep.join([tests, *sys.path])}  # flaky_env, importable by the explorer
    out = subprocess.run([sys.executable, "-c", SIGTERM_WHILE_EXPLORERS_ARE_BUILT], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 15 and "built" not in out.stdout, (out.returncode, out.stderr[-2000:])
