"""canter tune when no trial of the study completed: the trials table is still written."""
import csv

import pytest

from canter.cli import main


def test_tune_writes_the_trials_table_when_every_trial_failed(tmp_path, capsys, monkeypatch):
    """A study whose trials all failed (a search space whose samples cannot train) wrote no trials.csv: the failed
    trials' parameters could only be read from the Optuna storage or the log lines."""
    pytest.importorskip("optuna")
    monkeypatch.chdir(tmp_path)
    space = tmp_path / "space.yaml"
    space.write_text("buffer_size: {choices: [16]}\nbatch_size: {choices: [32, 64]}\n")  # a buffer below the batch
    out = tmp_path / "t"
    code = main(["tune", "dqn", "--env", "CartPole-v1", "--space", str(space), "--out", str(out), "--trials", "2",
                 "--max-steps", "64", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and f"see the messages above and {out / 'trials.csv'}" in err.splitlines()[-1]
    rows = list(csv.DictReader((out / "trials.csv").open()))
    assert [(r["number"], r["state"], r["buffer_size"]) for r in rows] == [("0", "fail", "16"), ("1", "fail", "16")]
    assert sorted(p.name for p in out.iterdir()) == ["study.db", "trials.csv"]
