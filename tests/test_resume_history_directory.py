"""A directory in place of one of a run's tables (history.parquet, evaluations.parquet, updates.parquet) is refused
by --resume in one line naming it a directory: pyarrow reads a directory as a dataset of the parquet files in it, so
an empty one was 'has 0 rows but the checkpoint expects N' and one holding parquet files was read as the table."""
from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from canter.cli import main
from support import snapshot


@pytest.fixture(scope="module")
def good_run(finished_ppo_run):
    return finished_ppo_run


@pytest.mark.parametrize("name", ["history", "evaluations", "updates"])
@pytest.mark.parametrize("holding", [False, True])
def test_a_directory_in_place_of_a_runs_table_is_refused_in_one_line(good_run, tmp_path, capsys, name, holding):
    run_dir = tmp_path / "run"
    shutil.copytree(good_run, run_dir)
    table = run_dir / f"{name}.parquet"
    rows = pq.read_table(table)
    table.unlink()
    table.mkdir()
    if holding:  # the run's own rows, in a file inside the directory: read as the table before
        pq.write_table(pa.concat_tables([rows] * 3), table / "part-0.parquet")
    before = snapshot(run_dir)
    assert main(["train", "--resume", str(run_dir), "--max-steps", "512", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and f"{table} is a directory" in err, err
    assert snapshot(run_dir) == before


@pytest.mark.parametrize("name", ["history", "evaluations", "updates"])
def test_a_directory_in_place_of_a_table_the_checkpoint_expects_no_rows_of_is_refused(tmp_path, name):
    """A checkpoint before the run's first evaluation expects 0 rows of evaluations.parquet: a directory there was
    not looked at, and the resumed run trained, then failed writing the table at the end (IsADirectoryError)."""
    from canter.errors import CanterError
    from canter.logging.history import check_history

    (tmp_path / f"{name}.parquet").mkdir()
    with pytest.raises(CanterError, match=f"{tmp_path / (name + '.parquet')} is a directory"):
        check_history(tmp_path, {name: 0})
