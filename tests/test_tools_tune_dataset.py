"""``canter tune`` checks ``--dataset`` against the algorithm and the env once, before the study: an online algorithm
given one, and a dataset collected on another env or with other env_kwargs, failed every trial instead (study.db
written, Optuna's warning per trial), as ``canter benchmark`` now refuses them before any run."""
import pytest

from canter.cli import main


@pytest.fixture
def dataset(tmp_path):
    from canter.data.dataset import collect

    collect("CartPole-v1", 20, None, seed=0).save(tmp_path / "cp")
    return str(tmp_path / "cp")


@pytest.mark.parametrize("args, says", [
    (["ppo", "--env", "CartPole-v1"], "--dataset is only for offline algorithms; ppo learns from the env: drop --dataset"),
    (["bc", "--env", "Acrobot-v1"], "was collected on CartPole-v1, not Acrobot-v1; pass --env CartPole-v1"),
    (["bc", "--env", "CartPole-v1", "--set", "env_kwargs={max_episode_steps: 100}"],
     "was collected with env_kwargs {}, not {'max_episode_steps': 100}; leave env_kwargs out of --set"),
], ids=["online", "env", "env_kwargs"])
def test_a_dataset_the_trials_would_fail_on_is_refused_before_the_study(tmp_path, capsys, dataset, args, says):
    pytest.importorskip("optuna")
    out = tmp_path / "t"
    assert main(["tune", *args, "--dataset", dataset, "--trials", "1", "--max-steps", "64", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
    assert not out.exists()
