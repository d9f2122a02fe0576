"""``--ray-address auto`` is joined at the address it stands for (``RAY_ADDRESS``, else the last ``ray start``'s):
a loopback cluster on loopback, and asked whether it wants a token, as ``host:port`` is."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from canter.errors import CanterError

ray = pytest.importorskip("ray")

from canter.distributed import cluster as cluster_module  # noqa: E402

LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def unset_restored(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Unset the environment variables ``names`` for the test, each put back as it was afterwards, also one that
    was unset and that the code under test sets (``monkeypatch.delenv`` of an unset variable records nothing, so
    what ``connect`` then set stayed for every later test)."""
    for name in names:
        monkeypatch.setenv(name, "")  # records the value before (or its absence) for the undo
        monkeypatch.delenv(name)


def test_auto_standing_for_a_loopback_cluster_keeps_ray_on_loopback_and_asks_it_about_tokens(monkeypatch):
    """Before, ``auto`` was neither: Ray resolved the cluster's 127.0.0.1 to the machine's address, where a cluster
    started on loopback does not listen, and retried for minutes; and the local token was sent without asking."""
    from ray._private import ray_constants

    unset_restored(monkeypatch, LOOPBACK_ENV, cluster_module.AUTH_MODE_ENV, "RAY_USAGE_STATS_ENABLED")
    # connect sets Ray's import-time copy of LOOPBACK_ENV too (_loopback_if_imported_earlier): put back afterwards
    monkeypatch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", ray_constants.ENABLE_RAY_CLUSTER)
    monkeypatch.setattr(cluster_module, "_auto_address", lambda: "127.0.0.1:1")
    monkeypatch.setattr(cluster_module, "_check_reachable", lambda address: None)
    asked = []
    monkeypatch.setattr(cluster_module, "cluster_uses_token_auth", lambda address: asked.append(address) or False)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)

    def init(address=None, **kw):
        raise ConnectionError(f"stand-in init of {address}")

    monkeypatch.setattr(ray, "init", init)
    with pytest.raises(CanterError, match=r"^cannot connect to Ray at '127.0.0.1:1': stand-in init of 127.0.0.1:1$"):
        cluster_module.connect("auto")
    assert os.environ.get(LOOPBACK_ENV) == "0" and asked == ["127.0.0.1:1"]


def test_the_auto_address_test_leaves_the_environment_as_it_found_it():
    """The test above unset RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER with ``monkeypatch.delenv(raising=False)``, which
    records nothing for an unset variable: ``connect`` then set it (and RAY_USAGE_STATS_ENABLED, and Ray's
    ``ENABLE_RAY_CLUSTER``) for every later test of the session. Run with those unset, it now leaves them so."""
    from ray._private import ray_constants

    names = (LOOPBACK_ENV, cluster_module.AUTH_MODE_ENV, "RAY_USAGE_STATS_ENABLED")
    with pytest.MonkeyPatch.context() as outer:
        unset_restored(outer, *names)
        outer.setattr(ray_constants, "ENABLE_RAY_CLUSTER", True)  # as Ray sets it without LOOPBACK_ENV at import
        with pytest.MonkeyPatch.context() as inner:
            test_auto_standing_for_a_loopback_cluster_keeps_ray_on_loopback_and_asks_it_about_tokens(inner)
        assert {name: os.environ.get(name) for name in names} == dict.fromkeys(names)
        assert ray_constants.ENABLE_RAY_CLUSTER is True


@pytest.mark.slow  # ~30 s: a CLI run joining the test cluster through RAY_ADDRESS
def test_cli_ray_address_auto_joins_a_loopback_cluster(cluster, tmp_path):
    """The docs' `ray start --head` then `--ray-address auto`, on a cluster started on loopback (RAY.md): the run
    hung (Ray's 'Failed to connect to GCS at address <the machine's address>:PORT', over and over)."""
    env = {k: v for k, v in os.environ.items() if k not in (LOOPBACK_ENV, cluster_module.AUTH_MODE_ENV)}
    env.update(RAY_ADDRESS=cluster, PYTHONPATH=os.pathsep.join(sys.path), WANDB_MODE="offline")
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "canter", "train", "impala", "--env", "CartPole-v1", "--explorers",
                           "1", "--ray-address", "auto", "--n-envs", "2", "--max-steps", "256", "--eval-episodes", "2",
                           "--quiet", "--run-dir", str(run)], env=env, capture_output=True, text=True, timeout=150)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (run / "checkpoints" / "last.json").exists()
