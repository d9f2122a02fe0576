"""ALE-style ids that ale-py does not register: one line naming the same game's ids."""
import pytest

from canter.cli import main

pytest.importorskip("ale_py")


@pytest.mark.parametrize("env_id,why", [
    ("PongDeterministic-v4", "ale-py registers no Deterministic ids"),  # the hint was 'Tennis-v4' or 'Phoenix-v4' ...
    ("BreakoutDeterministic-v0", "ale-py registers no Deterministic ids"),
    ("ALE/Pong-ram-v5", "RAM observations are not supported"),
    ("Pong-ramNoFrameskip-v4", "RAM observations are not supported"),
])
def test_a_retired_ale_id_names_the_same_game_s_ids(env_id, why, tmp_path, capsys):
    code = main(["train", "ppo", "--env", env_id, "--max-steps", "8", "--run-dir", str(tmp_path / "run"), "--quiet"])
    err = capsys.readouterr().err
    game = env_id.removeprefix("ALE/").split("-")[0].removesuffix("Deterministic")
    assert code == 2 and why in err and f"'{game}NoFrameskip-v4' or 'ALE/{game}-v5' is the game" in err, err
    assert "did you mean" not in err and len(err.strip().splitlines()) == 1


def test_an_unknown_game_still_gets_the_close_ids(capsys):
    assert main(["train", "ppo", "--env", "PongNoFrameskp-v4", "--max-steps", "8"]) == 2
    assert "did you mean 'PongNoFrameskip-v4'" in capsys.readouterr().err


@pytest.mark.parametrize("env_id", ["Pong-v4", "PongNoFrameskip-v0", "Pong-v0", "ale_py:Pong-v4"])
@pytest.mark.parametrize("algo", ["ppo", "dqn", "impala"])
def test_ale_py_s_older_ids_of_a_game_get_its_preset(env_id, algo):
    # the same game under canter's preprocessing: Pong-v4 ran without Pong's target_reward (never 'solved')
    from canter.config import preset_layers

    layers = preset_layers(algo, env_id)
    assert [p.rsplit("/", 1)[-1] for p, _ in layers] == ["atari.yaml", "PongNoFrameskip-v4.yaml"]
    assert layers[-1][1]["target_reward"] == 20
