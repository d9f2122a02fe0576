"""canter tune in an --out that holds another study's trials.csv (and no agent, no best.yaml: every trial of that
study failed): a new study there would replace the table, and its best.yaml would then keep the earlier study from
resuming in its own --out."""
import shutil

import pytest

from support import assert_one_line_error, run_cli, snapshot

optuna = pytest.importorskip("optuna")

BASE = ["tune", "ppo", "--env", "CartPole-v1", "--trials", "1", "--max-steps", "64", "--eval-every", "64", "--quiet"]
TABLE = "number,state,value,steps,seconds,lr\n0,fail,,,0.5,0.001\n"


@pytest.fixture(scope="module")
def failed_study(tmp_path_factory):
    """A folder holding study.db with study a2c-CartPole-v1 (one failed trial) and its trials.csv (made once: an
    SQLite storage's schema takes a second or two to create)."""
    out = tmp_path_factory.mktemp("failed") / "t"
    out.mkdir()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="a2c-CartPole-v1", storage=f"sqlite:///{out / 'study.db'}",
                                direction="maximize")
    study.set_user_attr("canter", {"algo": "a2c", "env": "CartPole-v1"})
    trial = study.ask({"lr": optuna.distributions.FloatDistribution(1e-5, 1e-2, log=True)})
    study.tell(trial, state=optuna.trial.TrialState.FAIL)
    (out / "trials.csv").write_text(TABLE)
    return out


def test_tune_refuses_a_new_study_beside_another_studys_trials_table(tmp_path, capsys, monkeypatch, failed_study):
    """The earlier study (a2c) is in OUT/study.db; ppo's study, new there, was run and its rows replaced a2c's table."""
    monkeypatch.setattr("canter.tools.tune._optimize", lambda *a, **k: pytest.fail("a trial ran"))
    out = tmp_path / "t"
    shutil.copytree(failed_study, out)
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, *BASE, "--out", str(out))
    assert_one_line_error(code, err, "trials.csv of an earlier study", "ppo-CartPole-v1", "has no trials")
    assert snapshot(tmp_path) == before


def test_tune_refuses_a_new_storage_beside_an_earlier_trials_table(tmp_path, capsys, monkeypatch):
    """The table alone (its study.db deleted, or another --storage) is refused too, and the new storage file is not
    left behind."""
    monkeypatch.setattr("canter.tools.tune._optimize", lambda *a, **k: pytest.fail("a trial ran"))
    out = tmp_path / "t"
    out.mkdir()
    (out / "trials.csv").write_text(TABLE)
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, *BASE, "--out", str(out))
    assert_one_line_error(code, err, "trials.csv of an earlier study")
    assert snapshot(tmp_path) == before


def test_tune_continues_its_own_study_whose_trials_all_failed(tmp_path, capsys, monkeypatch, failed_study):
    """The study the table belongs to (it has trials in the storage) is continued, not refused."""
    ran = []
    monkeypatch.setattr("canter.tools.tune._optimize", lambda *a, **k: ran.append(1))
    out = tmp_path / "t"
    shutil.copytree(failed_study, out)
    code, _, err = run_cli(capsys, *[a if a != "ppo" else "a2c" for a in BASE], "--out", str(out))
    assert ran and "trials.csv of an earlier study" not in err
    assert code == 2 and "no trial of study 'a2c-CartPole-v1' completed" in err  # (no trial ran: the stub)
