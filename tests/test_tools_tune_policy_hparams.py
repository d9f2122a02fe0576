"""canter tune of a multi-policy run whose policy_hparams fix a tuned hyperparameter for every policy: the sampled
value applied to none of them, and trials that differed only in it were compared as if it mattered."""
import pytest

from support import assert_one_line_error, run_cli

pytest.importorskip("optuna")
BASE = ["tune", "ppo", "--env", "pettingzoo:tests.mixed_agents", "--set", "policies=type", "--trials", "1",
        "--max-steps", "64", "--eval-every", "64", "--quiet"]


@pytest.mark.parametrize("fixed", ["{speaker: {lr: 0.01}, listener: {lr: 0.01}}",
                                   "{speaker: {lr: 0.01}, listener: {algo: a2c}}"])
def test_tune_refuses_a_hyperparameter_every_policy_fixes(tmp_path, capsys, monkeypatch, fixed):
    """Every policy fixes lr, or trains with another algorithm (a2c from its own defaults): refused before the study,
    nothing written."""
    monkeypatch.setattr("canter.tools.tune._optimize", lambda *a, **k: pytest.fail("a trial ran"))
    out = tmp_path / "t"
    code, _, err = run_cli(capsys, *BASE, "--set", f"policy_hparams={fixed}", "--out", str(out))
    assert_one_line_error(code, err, "'lr' is tuned", "every policy (listener, speaker)", "null in --space")
    assert not out.exists()


def test_tune_takes_a_hyperparameter_one_policy_still_trains_with(tmp_path, capsys, monkeypatch):
    """The speaker fixes lr, the listener trains with the sampled one: the study runs."""
    ran = []
    monkeypatch.setattr("canter.tools.tune._optimize", lambda *a, **k: ran.append(1))
    _, _, err = run_cli(capsys, *BASE, "--set", "policy_hparams={speaker: {lr: 0.01}}", "--out",
                        str(tmp_path / "t"))
    assert ran, err


@pytest.mark.parametrize("name, refused", [("noise_std", False), ("lr", True)])
def test_a_frozen_policy_takes_a_tuned_hyperparameter_it_acts_with(tmp_path, capsys, monkeypatch, name, refused):
    """A frozen policy never updates, but explores with its config's noise_std: tuning noise_std where agent_0 trains
    with dqn and agent_1 (td3) is frozen was refused as applying to no policy. lr, which acts only in updates, still
    is refused there."""
    ran = []
    monkeypatch.setattr("canter.tools.tune._optimize", lambda *a, **k: ran.append(1))
    space = tmp_path / "space.yaml"
    space.write_text("".join(f"{k}: null\n" for k in ("lr", "batch_size", "gamma", "tau", "train_freq", "gradient_steps",
                                                      "n_step") if k != name) + f"{name}: {{low: 0.0001, high: 0.5}}\n")
    _, _, err = run_cli(capsys, "tune", "td3", "--env", "pettingzoo:tests.box_beside_masks", "--set", "policies=agent",
                        "--set", "init_from=no-such-run", "--set",
                        "policy_hparams={agent_0: {algo: dqn}, agent_1: {frozen: true}}", "--space", str(space),
                        "--trials", "1", "--max-steps", "64", "--eval-every", "64", "--quiet", "--out",
                        str(tmp_path / "t"))
    assert (f"'{name}' is tuned" in err) == refused and bool(ran) != refused, err
