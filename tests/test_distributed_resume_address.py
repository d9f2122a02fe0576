"""A run with explorers resumes on another Ray cluster (``--ray-address`` / ``ray_address=``): the address changes
nothing the run learns, and a cluster restarted at another address (or a run started on a private local Ray and
continued on a cluster) could not go on: a resume refused the flag."""
from __future__ import annotations

import json

import pytest

import canter
from canter.errors import CanterError
from support import assert_one_line_error, run_cli, snapshot


def test_a_resume_takes_ray_address_and_checks_it_like_a_new_run(tmp_path, capsys, tiny_ppo):
    """Before, ``--ray-address`` with ``--resume`` was 'unrecognized arguments' and ``ray_address=`` was
    "'ray_address' cannot change when a run is resumed". Now the resumed run's config takes it and checks it
    as a new run's (here: a run without explorers, which has no use for one), writing nothing."""
    run_dir = tmp_path / "run"
    canter.train("ppo", "CartPole-v1", run_dir=run_dir, quiet=True, **tiny_ppo)
    before = snapshot(run_dir)
    code, _, err = run_cli(capsys, "train", "--resume", str(run_dir), "--ray-address", "127.0.0.1:1",
                           "--max-steps", "640", "--quiet")
    # not the new run's 'add --explorers N': a resume refuses --explorers (the explorers change what the run learns)
    assert_one_line_error(code, err, "this run has none (explorers: 0), and a resume cannot add them: drop --ray-address")
    assert "add --explorers" not in err
    with pytest.raises(CanterError, match=r"^ray_address names the Ray cluster of a run's explorers, but this run "
                                          r"has none .*: drop ray_address$"):  # canter.resume's keyword
        canter.resume(run_dir, ray_address="auto", max_steps=640)
    assert snapshot(run_dir) == before


@pytest.mark.slow  # ~30 s: a run on the test cluster, a resume refused, a resume on the cluster
def test_a_run_with_explorers_resumes_on_the_cluster_a_resume_names(cluster, tmp_path, capsys):
    run_dir = tmp_path / "run"
    canter.train("impala", "CartPole-v1", ray_address=cluster, explorers=1, n_envs=2, n_steps=16, max_steps=256,
                 eval_every=0, eval_episodes=2, run_dir=run_dir, quiet=True)
    before = snapshot(run_dir)
    code, _, err = run_cli(capsys, "train", "--resume", str(run_dir), "--ray-address", "127.0.0.1:1",
                           "--max-steps", "512", "--quiet")  # the saved cluster is not asked: the one given is
    assert code == 2 and err.strip().startswith("canter: error: no Ray cluster at '127.0.0.1:1'"), err
    assert snapshot(run_dir) == before
    code, _, err = run_cli(capsys, "train", "--resume", str(run_dir), "--ray-address", cluster, "--max-steps", "512",
                           "--quiet")
    assert code == 0, err
    assert json.loads((run_dir / "summary.json").read_text())["steps"] >= 512
    assert json.loads((run_dir / "checkpoints" / "last.json").read_text())["config"]["ray_address"] == cluster
