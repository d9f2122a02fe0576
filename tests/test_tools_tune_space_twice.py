"""canter tune's --space naming one hyperparameter twice (``lr`` and ``hparams.lr``): refused in one line, as a config
file naming it twice is, not the later entry kept without a word."""
import pytest

from canter.errors import CanterError
from support import assert_one_line_error, run_cli, snapshot


@pytest.mark.parametrize("text", [
    "lr: {low: 1.0e-4, high: 1.0e-3, log: true}\nhparams.lr: {choices: [0.5]}\n",
    "hparams.n_steps: null\nn_steps: {choices: [64, 128]}\n",
])
def test_a_space_naming_a_hyperparameter_twice_is_refused(tmp_path, text):
    """search_space kept the later entry: the log-scale lr range above was replaced by {choices: [0.5]}."""
    from canter.tools.tune_space import search_space

    f = tmp_path / "space.yaml"
    f.write_text(text)
    with pytest.raises(CanterError, match=r"' and '.*' both name '(lr|n_steps)' in --space .*; give it once"):
        search_space("ppo", f)


def test_a_space_naming_a_hyperparameter_twice_is_one_line_before_the_study(tmp_path, capsys, monkeypatch):
    """From the command line: one line, exit code 2, nothing written."""
    pytest.importorskip("optuna")
    monkeypatch.setattr("canter.tools.tune._optimize", lambda *a, **k: pytest.fail("a trial ran"))
    f = tmp_path / "space.yaml"
    f.write_text("lr: {low: 1.0e-4, high: 1.0e-3}\nhparams.lr: {low: 1.0e-5, high: 1.0e-4}\n")
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, "tune", "ppo", "--env", "CartPole-v1", "--out", str(tmp_path / "t"), "--space",
                           str(f), "--trials", "1", "--quiet")
    assert_one_line_error(code, err, "'lr' and 'hparams.lr' both name 'lr'")
    assert snapshot(tmp_path) == before


def test_distinct_names_are_taken(tmp_path):
    """Two hyperparameters, each named once (one with the hparams. prefix), are both tuned."""
    from canter.tools.tune_space import search_space

    f = tmp_path / "space.yaml"
    f.write_text("lr: {low: 1.0e-4, high: 1.0e-3}\nhparams.n_steps: {choices: [64, 128]}\n")
    space = search_space("ppo", f)
    assert space["lr"].kind == "float" and space["n_steps"].choices == (64, 128)
