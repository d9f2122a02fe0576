"""Wording of three messages: a file's ``algo: [ppo]`` was "is for algorithm '['ppo']'", ``--set env_kwargs=`` said
"got None" (YAML's word is null), and ``canter list`` showed an empty summary for an algorithm without a docstring."""
import pytest

from canter.builtins import describe_algorithm
from canter.config import resolve_config
from canter.errors import CanterError
from support import assert_one_line_error, run_cli


@pytest.mark.parametrize("text, said", [("algo: [ppo]", r"got a list \(\['ppo'\]\)$"),
                                        ("algo: 5", r"got a number \(5\)$"),
                                        ("algo: {ppo: 1}", r"got a mapping \(\{'ppo': 1\}\)$")])
def test_an_algo_key_that_is_no_name_is_named_so(tmp_path, text, said):
    path = tmp_path / "run.yaml"
    path.write_text(f"env: CartPole-v1\n{text}\n")
    with pytest.raises(CanterError, match=rf"^'algo' in .*run\.yaml must be an algorithm name .*{said}"):
        resolve_config("ppo", config_file=path)
    with pytest.raises(CanterError, match=r"^'algo' in --set must be an algorithm name .*got an empty name$"):
        resolve_config("ppo", "CartPole-v1", sets=["algo="])
    with pytest.raises(CanterError, match=r"is for algorithm 'dqn', not 'ppo'"):  # a name: as it was
        path.write_text("env: CartPole-v1\nalgo: dqn\n")
        resolve_config("ppo", config_file=path)


@pytest.mark.parametrize("key", ["env_kwargs", "eval_env_kwargs", "hooks", "policy_hparams"])
def test_an_empty_set_of_a_mapping_is_named_empty(tmp_path, capsys, key):
    """It said 'got null' (YAML's reading of the empty text), where an empty number said "got ''": both say 'got an
    empty value' now (tests/test_set_empty_values.py)."""
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", f"{key}=", "--run-dir",
                           str(tmp_path / "run"))
    assert_one_line_error(code, err, f"'{key}' must be a dict, got an empty value")
    assert not (tmp_path / "run").exists()


def test_an_algorithm_without_a_docstring_has_a_summary():
    from canter.algorithms.ppo import PPO

    class NoDocPPO(PPO):
        name = "nodoc_ppo"

    assert describe_algorithm(NoDocPPO)["summary"] == "NoDocPPO (no docstring; extends PPO)"
    assert describe_algorithm(PPO)["summary"].startswith("PPO with a clipped surrogate objective")


@pytest.mark.parametrize("text", ["algo: [ppo]", "algo: 5"])
def test_a_files_algo_that_is_no_name_is_named_so_where_the_command_names_none(tmp_path, capsys, text):
    """The file's algorithm taken where the command names none: canter.make_trainer(config_file=...) said "algorithm
    must be a registered name or a 'module:Class' string, got ['ppo']; register a class ...", not naming the file,
    and canter train -f FILE another wording than canter train ppo -f FILE."""
    import canter

    path = tmp_path / "run.yaml"
    path.write_text(f"env: CartPole-v1\n{text}\n")
    said = []
    for call in (lambda: canter.make_trainer(config_file=path), lambda: resolve_config("ppo", config_file=path)):
        with pytest.raises(CanterError) as info:
            call()
        said.append(str(info.value))
    code, _, err = run_cli(capsys, "train", "-f", str(path), "--quiet")
    assert_one_line_error(code, err, said[1])
    assert said[0] == said[1] and said[0].startswith(f"'algo' in {path} must be an algorithm name")
