"""canter train --resume of a canter tune output whose trials all failed (OUT holds study.db and trials.csv, no
best.yaml and no agents): named a tune output, as one with a best trial is."""
import pytest

from canter.errors import CanterError
from support import assert_one_line_error, run_cli


def _failing_trainer(*args, **kwargs):
    raise CanterError("this trial fails")


@pytest.mark.slow
def test_resuming_a_tune_output_with_no_complete_trial_says_it_is_one(tmp_path, capsys, monkeypatch):
    """Every trial failed: tune wrote OUT/trials.csv (and OUT/study.db) only, and 'canter train --resume OUT' said
    'has no checkpoints/last to resume from', as of a run directory, where a tune output with a best.yaml or a kept
    agent is named one."""
    pytest.importorskip("optuna")
    monkeypatch.setattr("canter.api.make_trainer", _failing_trainer)
    out = tmp_path / "t"
    code, _, err = run_cli(capsys, "tune", "ppo", "--env", "CartPole-v1", "--out", str(out), "--trials", "1",
                           "--quiet")
    assert code == 2 and "no trial of study" in err
    assert not (out / "best.yaml").exists() and (out / "trials.csv").is_file()
    code, _, err = run_cli(capsys, "train", "--resume", str(out))
    assert_one_line_error(code, err, f"'{out}' is a canter tune output", "same canter tune command")


def test_resuming_the_files_of_a_study_whose_trials_failed_names_a_tune_output(tmp_path, capsys):
    """The fast form of the test above: OUT as such a study leaves it (tune's trials.csv and its study.db)."""
    out = tmp_path / "tune-ppo-CartPole-v1"
    out.mkdir()
    (out / "study.db").write_bytes(b"")
    (out / "trials.csv").write_text("number,state,value,steps,seconds,lr\n0,fail,,,,0.001\n")
    code, _, err = run_cli(capsys, "train", "--resume", str(out))
    assert_one_line_error(code, err, f"'{out}' is a canter tune output", "same canter tune command")


def test_a_folder_with_another_trials_csv_is_not_named_a_tune_output(tmp_path, capsys):
    """Only tune's own trials.csv (its header) marks a tune output: a folder holding some other trials.csv keeps the
    run-directory message."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "trials.csv").write_text("trial,score\n1,2\n")
    code, _, err = run_cli(capsys, "train", "--resume", str(folder))
    assert_one_line_error(code, err, f"'{folder}' has no checkpoints/last to resume from")
