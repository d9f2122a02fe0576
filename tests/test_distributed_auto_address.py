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


def test_auto_standing_for_a_loopback_cluster_keeps_ray_on_loopback_and_asks_it_about_tokens(monkeypatch):
    """Before, ``auto`` was neither: Ray resolved the cluster's 127.0.0.1 to the machine's address, where a cluster
    started on loopback does not listen, and retried for minutes; and the local token was sent without asking."""
    monkeypatch.delenv(LOOPBACK_ENV, raising=False)
    monkeypatch.delenv(cluster_module.AUTH_MODE_ENV, raising=False)
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
