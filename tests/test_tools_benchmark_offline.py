"""An offline algorithm (bc, cql, td3bc) in a benchmark file: its dataset is checked with the other combinations,
before the first run.

Without a dataset, ``check_cells`` passed and the error came when its first run started: after every run listed
before it had trained, with ``OUT/runs`` made, and worded for ``canter train`` ("pass --dataset PATH"), a flag that
``canter benchmark`` does not take.
"""
from __future__ import annotations

import pytest

from canter.errors import CanterError
from canter.tools.benchmark import benchmark, check_cells, load_spec


def _spec(tmp_path, text):
    path = tmp_path / "bm.yaml"
    path.write_text(text)
    return path


def test_an_offline_algorithm_without_a_dataset_is_refused_before_any_run(tmp_path):
    path = _spec(tmp_path, "seeds: 1\nset: {max_steps: 64}\nenvs: [CartPole-v1]\nalgos: [ppo, bc]\n")
    with pytest.raises(CanterError, match=r"bc learns from a dataset: give one in the benchmark file, "
                                          r"set: \{dataset: PATH\} .*canter collect RUN_DIR --out PATH"):
        check_cells(load_spec(path))
    with pytest.raises(CanterError, match="bc learns from a dataset"):
        benchmark(path, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()  # ppo did not train first



def test_a_dataset_of_another_env_is_refused_before_any_run(tmp_path):
    """bc listed on Acrobot-v1 with a CartPole-v1 dataset: ppo's CartPole-v1 run trained first, then the error."""
    from canter.data.dataset import collect

    collect("CartPole-v1", 20, None, seed=0).save(tmp_path / "cp")
    path = _spec(tmp_path, f"seeds: 1\nset: {{max_steps: 64}}\nenvs: [CartPole-v1]\nalgos:\n  ppo: {{}}\n"
                           f"  bc: {{envs: [Acrobot-v1], set: {{dataset: {tmp_path / 'cp'}}}}}\n")
    with pytest.raises(CanterError, match=r"bc on Acrobot-v1: dataset '.*cp' was collected on CartPole-v1; list "
                                          r"bc under envs: \[CartPole-v1\]"):
        benchmark(path, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_dataset_given_to_an_online_algorithm_is_refused_before_any_run(tmp_path):
    """A top-level set: {dataset: PATH} (as the offline error suggested) reaches ppo too: bc trained first, then
    ppo's run failed on "'dataset' is only for offline algorithms"."""
    from canter.data.dataset import collect

    collect("CartPole-v1", 20, None, seed=0).save(tmp_path / "cp")
    path = _spec(tmp_path, f"seeds: 1\nset: {{max_steps: 64, dataset: {tmp_path / 'cp'}}}\nenvs: [CartPole-v1]\n"
                           f"algos: [bc, ppo]\n")
    with pytest.raises(CanterError, match=r"ppo learns from the env and takes no dataset .*algos: \{bc: \{set: "
                                          r"\{dataset: PATH\}\}\} \(a top-level set applies to every algorithm\)"):
        benchmark(path, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()  # bc did not train first


def test_env_kwargs_the_dataset_was_not_collected_with_are_refused_before_any_run(tmp_path):
    """A top-level env_kwargs reaches bc too: ppo trained first, then bc's run failed on 'was collected with
    env_kwargs {}'."""
    from canter.data.dataset import collect

    collect("CartPole-v1", 20, None, seed=0).save(tmp_path / "cp")
    path = _spec(tmp_path, f"seeds: 1\nset: {{max_steps: 64, env_kwargs: {{max_episode_steps: 100}}}}\n"
                           f"envs: [CartPole-v1]\nalgos:\n  ppo: {{}}\n  bc: {{set: {{dataset: {tmp_path / 'cp'}}}}}\n")
    with pytest.raises(CanterError, match=r"bc on CartPole-v1: dataset '.*cp' was collected with env_kwargs \{\}, not "
                                          r"\{'max_episode_steps': 100\}; .*leave env_kwargs out of bc's set"):
        benchmark(path, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()  # ppo did not train first
