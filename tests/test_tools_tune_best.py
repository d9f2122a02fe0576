"""Which trial canter tune calls the best, and its agent: ties, out-of-order trials (--jobs)."""
from pathlib import Path
from types import SimpleNamespace

import pytest


def _fake_save(agent, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.with_name(path.name + ".json").write_text("{}")


def test_a_tie_goes_to_the_earlier_trial_and_keeps_its_agent(tmp_path, monkeypatch):
    """With --jobs, trial 1 completed first with 5.0 and saved its agent; trial 0 then completed with the same 5.0
    and saved nothing (not better). The study's best was trial 0 (Optuna's tie order), whose agent did not exist:
    best.yaml named no agent and trial 1's was removed (seen in a CartPole run whose returns were all 5)."""
    optuna = pytest.importorskip("optuna")  # (in the test: its log handler takes the stderr of its first use)
    from canter.tools import tune as tune_mod
    from canter.tools.tune_agents import agent_path, save_if_best

    monkeypatch.setattr("canter.checkpoint.save_agent", _fake_save)
    monkeypatch.setattr(tune_mod, "save_plots", lambda *a: {})
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(study_name="s", storage=url, direction="maximize")
    first, second = study.ask(), study.ask()  # trials 0 and 1, training at once
    trainer = SimpleNamespace(agent=None)
    for trial in (second, first):  # trial 1 ends first
        save_if_best(trial, trainer, tmp_path, 5.0)
        trial.set_user_attr("config", {"algo": "ppo"})  # what it trained with, for best.yaml
        study.tell(trial, 5.0)
    result = tune_mod._finish("s", url, "ppo", "CartPole-v1", None, [], {}, tmp_path, 0)
    assert result.best_trial == 0 and result.files.get("agent") == agent_path(tmp_path, 0)
    assert sorted(p.name for p in (tmp_path / "agents").iterdir()) == ["trial-0.json"]
    assert "# its agent: canter play" in (tmp_path / "best.yaml").read_text()
    later = study.ask()  # a later tie saves nothing: trial 0 stays the best
    save_if_best(later, trainer, tmp_path, 5.0)
    assert not (tmp_path / "agents" / "trial-2.json").exists()


def test_best_of():
    """The highest value; a tie to the lowest number; None for no trials."""
    from canter.tools.tune_agents import best_of

    t = [SimpleNamespace(number=n, value=v) for n, v in ((3, 1.0), (1, 2.0), (2, 2.0), (0, -1.0))]
    assert best_of(t).number == 1 and best_of([]) is None


def test_best_yaml_names_the_code_that_wrote_it_as_config_yaml_does(tmp_path, monkeypatch):
    """A run's config.yaml starts with canter's version and git commit; best.yaml had no such line. Its header now
    ends with the same line (the study line stays second, where a later tune checks the --out's owner), and
    the file still resolves as a config."""
    optuna = pytest.importorskip("optuna")
    from canter.config import resolve_config, resolved_dict
    from canter.run import provenance_comment
    from canter.tools import tune as tune_mod

    monkeypatch.setattr(tune_mod, "save_plots", lambda *a: {})
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(study_name="s", storage=url, direction="maximize")
    trial = study.ask()
    trial.set_user_attr("config", resolved_dict(*resolve_config("ppo", "CartPole-v1", n_steps=64)))
    study.tell(trial, 5.0)
    tune_mod._finish("s", url, "ppo", "CartPole-v1", None, [], {}, tmp_path, 0)
    text = (tmp_path / "best.yaml").read_text()
    lines = text.splitlines()
    assert lines[1].startswith("# study 's' in ") and provenance_comment() in text
    assert lines[[i for i, line in enumerate(lines) if not line.startswith("#")][0] - 1] + "\n" == provenance_comment()
    tune_mod._check_out_owner(tmp_path, "s", url, default_storage=True)  # this study's: not refused
    run, cfg = resolve_config("ppo", None, tmp_path / "best.yaml")
    assert run.env == "CartPole-v1" and cfg.n_steps == 64


def test_best_yamls_commands_quote_their_paths(tmp_path, monkeypatch):
    """best.yaml's header showed 'canter train ppo -f OUT/best.yaml' and 'canter play OUT/agents/trial-0' with the
    paths as they were: an --out with a space made commands that split it in two. The paths are now shell-quoted."""
    import shlex

    optuna = pytest.importorskip("optuna")
    from canter.tools import tune as tune_mod
    from canter.tools.tune_agents import agent_path, save_if_best

    monkeypatch.setattr("canter.checkpoint.save_agent", _fake_save)
    monkeypatch.setattr(tune_mod, "save_plots", lambda *a: {})
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    out = tmp_path / "my study"
    out.mkdir()
    url = f"sqlite:///{out / 'study.db'}"
    study = optuna.create_study(study_name="s", storage=url, direction="maximize")
    trial = study.ask()
    save_if_best(trial, SimpleNamespace(agent=None), out, 5.0)
    trial.set_user_attr("config", {"algo": "ppo"})
    study.tell(trial, 5.0)
    tune_mod._finish("s", url, "ppo", "CartPole-v1", None, [], {}, out, 0)
    lines = (out / "best.yaml").read_text().splitlines()
    train = next(line for line in lines if line.startswith("# train it with: "))
    play = next(line for line in lines if line.startswith("# its agent: "))
    train_argv = ["canter", "train", "ppo", "-f", str(out / "best.yaml")]
    assert shlex.split(train.removeprefix("# train it with: ")) == train_argv
    assert shlex.split(play.removeprefix("# its agent: ")) == ["canter", "play", str(agent_path(out, 0))]
