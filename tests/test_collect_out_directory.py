"""``canter collect --out DIR`` where DIR is a directory: refused in one line (it wrote DIR.safetensors and DIR.json
beside the directory, named like it: a run directory's name given to --dataset then meant that dataset)."""
from __future__ import annotations

import pytest

from support import assert_one_line_error, run_cli, snapshot


@pytest.mark.parametrize("out", ["run", "run/checkpoints", "run.json"])
def test_collect_out_naming_a_directory_is_refused_and_writes_nothing(tmp_path, capsys, out):
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    (tmp_path / "run" / "config.yaml").write_text("algo: ppo\n")
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, "collect", "--env", "CartPole-v1", "--transitions", "10",
                           "--out", str(tmp_path / out))
    directory = tmp_path / out.removesuffix(".json")
    assert_one_line_error(code, err, f"'{directory}' is a directory", f"{directory / 'dataset'}")
    assert snapshot(tmp_path) == before


def test_a_dataset_saved_from_python_to_a_directory_is_refused(tmp_path):
    """TransitionDataset.save(DIR) wrote DIR.safetensors and DIR.json beside the directory, as --out DIR did."""
    from canter.data.dataset import collect
    from canter.errors import CanterError

    (tmp_path / "run").mkdir()
    dataset = collect("CartPole-v1", 10)
    before = snapshot(tmp_path)
    with pytest.raises(CanterError, match=f"'{tmp_path / 'run'}' is a directory.*'{tmp_path / 'run' / 'dataset'}'"):
        dataset.save(tmp_path / "run")
    assert snapshot(tmp_path) == before
    assert dataset.save(tmp_path / "run" / "dataset").name == "dataset"


def test_a_dataset_saved_where_its_json_is_a_directory_names_a_dataset(tmp_path):
    """save_checkpoint's refusal of a directory in place of the .json said 'cannot save the checkpoint' for a dataset
    too (as reading one said 'pass another checkpoint' before c2557722)."""
    from canter.data.dataset import collect
    from canter.errors import CanterError

    (tmp_path / "d.json").mkdir()
    with pytest.raises(CanterError, match=f"^cannot save the dataset: {tmp_path / 'd.json'} is a directory"):
        collect("CartPole-v1", 10).save(tmp_path / "d")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.json"]
