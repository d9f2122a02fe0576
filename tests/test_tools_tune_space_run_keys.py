"""canter tune's search space sampling a run setting that tune refuses as a flag: refused in one line before the
study, as the flag is, not trial after failed trial."""
import pytest

from support import assert_one_line_error, run_cli, snapshot

BASE = ["tune", "ppo", "--env", "CartPole-v1", "--trials", "2", "--max-steps", "64", "--eval-every", "64", "--quiet"]


@pytest.mark.parametrize("entry, needles", [
    ("wandb: {choices: [false, true]}", ("'wandb' applies to a run directory", "--space")),
    ("record_every: {choices: [0, 100]}", ("'record_every' applies to a run directory",)),
    ("record_every: {low: 0, high: 1000}", ("'record_every' applies to a run directory",)),
    ("eval_episodes: {choices: [0, 2]}", ("samples 'eval_episodes' 0", "values >= 1")),
    ("eval_episodes: {low: 0, high: 4}", ("'eval_episodes' 0",)),
])
def test_a_search_space_sampling_a_refused_run_setting_is_one_line_before_the_study(tmp_path, capsys, monkeypatch,
                                                                                    entry, needles):
    """--space with `wandb: {choices: [false, true]}` (or record_every on, or an eval_episodes of 0) was taken, and
    every trial that drew the value failed ("Trial 1 failed ...", 3 of 4 trials): the flags --set wandb=true,
    record_every=1000 and eval_episodes=0 are refused before the study in one line."""
    pytest.importorskip("optuna")
    monkeypatch.setattr("canter.tools.tune._optimize", lambda *a, **k: pytest.fail("a trial ran"))
    space = tmp_path / "space.yaml"
    space.write_text(entry + "\n")
    before = snapshot(tmp_path)
    code, _, err = run_cli(capsys, *BASE, "--out", str(tmp_path / "t"), "--space", str(space))
    assert_one_line_error(code, err, *needles)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("entry", ["wandb: {choices: [false]}", "record_every: {choices: [0]}",
                                   "eval_episodes: {choices: [1, 2]}"])
def test_a_search_space_of_allowed_run_settings_is_taken(tmp_path, entry):
    """The values tune takes as flags are taken in the search space too."""
    from canter.tools.tune_space import check_space_run_keys, search_space

    space = tmp_path / "space.yaml"
    space.write_text(entry + "\n")
    check_space_run_keys(search_space("ppo", space))
