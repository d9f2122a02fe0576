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

