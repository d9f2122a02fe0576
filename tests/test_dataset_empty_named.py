"""An empty ``dataset`` is refused naming where the user wrote it: a benchmark file's ``set``, a config file or
``--set``. Each said "--dataset needs a dataset path, got ''", naming a flag the user had not given (and that
``canter benchmark`` does not take). A mistyped dataset name is answered with the datasets beside it."""
from __future__ import annotations

import json

import pytest

from canter.errors import CanterError
from support import assert_one_line_error, run_cli


@pytest.mark.parametrize("where", ["top", "algo"])
@pytest.mark.parametrize("value", ["''", "' '"])
def test_a_benchmark_files_empty_dataset_names_its_set(capsys, workdir, where, value):
    top, algo = (f"set: {{dataset: {value}}}\n", "") if where == "top" else ("", f", set: {{dataset: {value}}}")
    (workdir / "bm.yaml").write_text(f"seeds: 1\n{top}algos:\n  bc: {{envs: [CartPole-v1]{algo}}}\n")
    code, _, err = run_cli(capsys, "benchmark", str(workdir / "bm.yaml"), "--out", str(workdir / "out"))
    line = assert_one_line_error(code, err, "dataset in the benchmark file's set (bc on CartPole-v1) needs a dataset "
                                            "path, got ", "canter collect RUN_DIR --out PATH")
    assert "--dataset" not in line
    assert not (workdir / "out").exists()


@pytest.mark.parametrize("env", [["--env", "CartPole-v1"], []])
def test_a_config_files_empty_dataset_names_the_file(capsys, workdir, env):
    (workdir / "c.yaml").write_text("algo: bc\ndataset: ''\n")
    code, _, err = run_cli(capsys, "train", "-f", str(workdir / "c.yaml"), *env, "--run-dir", str(workdir / "run"))
    line = assert_one_line_error(code, err, f"dataset in {workdir / 'c.yaml'} needs a dataset path, got ''")
    assert "--dataset" not in line
    assert not (workdir / "run").exists()


@pytest.mark.parametrize("env", [["--env", "CartPole-v1"], []])
def test_an_empty_set_dataset_names_set(capsys, workdir, env):
    code, _, err = run_cli(capsys, "train", "bc", *env, "--set", "dataset=", "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "canter: error: --set dataset needs a dataset path, got ''")
    assert not (workdir / "run").exists()


def test_a_dataset_flag_wins_over_the_files_empty_one(capsys, workdir):
    """The arguments' dataset wins over a file's: an empty one in the file is not refused then (the flag's own
    dataset is checked: here it does not exist)."""
    (workdir / "c.yaml").write_text("algo: bc\nenv: CartPole-v1\ndataset: ''\n")
    code, _, err = run_cli(capsys, "train", "-f", str(workdir / "c.yaml"), "--dataset", str(workdir / "none"),
                           "--run-dir", str(workdir / "run"))
    assert_one_line_error(code, err, "dataset not found")


@pytest.mark.parametrize("given", ["set", "file"])
def test_an_online_algorithms_empty_dataset_is_refused_as_taking_none(capsys, workdir, given):
    """ppo takes no dataset: an empty one was refused as 'needs a dataset path (write one with canter collect ...)',
    pointing the user to a dataset that ppo would then refuse."""
    (workdir / "c.yaml").write_text("algo: ppo\nenv: CartPole-v1\ndataset: ''\n")
    args = (["ppo", "--env", "CartPole-v1", "--set", "dataset="] if given == "set" else ["-f", str(workdir / "c.yaml")])
    code, _, err = run_cli(capsys, "train", *args, "--run-dir", str(workdir / "run"))
    line = assert_one_line_error(code, err, "'dataset' is only for offline algorithms", "ppo learns from the env")
    assert "needs a dataset path" not in line
    assert not (workdir / "run").exists()


@pytest.mark.parametrize("args", [["--set", "dataset="], ["--dataset", ""], ["--set", "dataset=none.npz"]])
def test_an_online_algorithms_dataset_without_an_env_is_refused_as_taking_none(capsys, workdir, args):
    """Without --env the dataset was read for its env: ppo's empty one was refused as '--dataset needs a dataset
    path' (naming a flag not given, for --set), a missing one as 'dataset not found', both pointing to a dataset."""
    code, _, err = run_cli(capsys, "train", "ppo", *args, "--run-dir", str(workdir / "run"))
    line = assert_one_line_error(code, err, "'dataset' is only for offline algorithms (bc, cql, td3bc)",
                                 "ppo learns from the env")
    assert "dataset path" not in line and "not found" not in line
    assert not (workdir / "run").exists()


@pytest.mark.parametrize("algo", ["ppo", "bc"])
@pytest.mark.parametrize("args", [["--set", "dataset=null"], ["--set", "dataset=~"], ["--set", "dataset=None"],
                                  ["--dataset", "null"]])
def test_a_null_dataset_without_an_env_is_no_dataset(capsys, workdir, algo, args):
    """--set dataset=null (--dataset null) means no dataset, as it does with --env: without one it is 'no environment
    given', not ppo refused as taking a dataset (184b8e6) nor a dataset file named 'null' looked for."""
    code, _, err = run_cli(capsys, "train", algo, *args, "--run-dir", str(workdir / "run"))
    line = assert_one_line_error(code, err, "no environment given")
    assert "dataset" not in line
    assert not (workdir / "run").exists()


def test_a_mistyped_dataset_name_names_the_datasets_beside_it(tmp_path):
    """'--dataset data/cartpol' said 'write one with canter collect' where data/cartpole was there."""
    from canter.data.dataset import KIND, read_dataset_metadata

    for name, kind in (("cartpole", KIND), ("cartpole_ckpt", "checkpoint")):
        (tmp_path / f"{name}.json").write_text(json.dumps({"kind": kind}))
        (tmp_path / f"{name}.safetensors").write_bytes(b"")
    with pytest.raises(CanterError, match=rf"dataset not found: .*; did you mean '{tmp_path / 'cartpole'}'\?\)$"):
        read_dataset_metadata(tmp_path / "cartpol")
    with pytest.raises(CanterError, match=r"\.json; write one with canter collect\)$"):  # none like it
        read_dataset_metadata(tmp_path / "zzz")
