"""Run config files: a run's config.yaml given back with -f (the run again, from any directory, without naming its
algorithm), and odd YAML in them."""
import re

import pyarrow.parquet as pq
import pytest
import yaml

import canter
from canter.cli import main
from canter.errors import CanterError
from canter.yaml_io import load_yaml, parse_yaml_value
from tests.support import TINY_ARGV, assert_one_line_error, run_cli


def _losses(run_dir):
    """The first logged iteration's losses of a run (its timing columns left out)."""
    row = pq.read_table(run_dir / "updates.parquet").to_pylist()[0]
    return {k: v for k, v in row.items() if k not in ("wall_time", "steps_per_second")}


def test_a_runs_config_yaml_alone_reproduces_it(tmp_path, capsys):
    """'canter train -f RUN/config.yaml' (the algorithm is in the file, as its env is) was refused with argparse's
    'the following arguments are required: algo', and make_trainer(config_file=...) of a DQN run said the file
    'is for algorithm dqn, not ppo' (its default). Both now take the file's algorithm: same config, same losses."""
    first, again = tmp_path / "first", tmp_path / "again"
    assert main(["train", "dqn", "--env", "CartPole-v1", "--seed", "5", "--run-dir", str(first), "--max-steps", "96",
                 "--n-envs", "1", "--eval-episodes", "0", "--set", "learning_starts=64", "--set", "lr=3e-4",
                 "--quiet"]) == 0
    assert main(["train", "-f", str(first / "config.yaml"), "--run-dir", str(again), "--quiet"]) == 0
    assert yaml.safe_load((again / "config.yaml").read_text()) == yaml.safe_load((first / "config.yaml").read_text())
    assert _losses(again) == _losses(first)
    trainer = canter.make_trainer(config_file=first / "config.yaml")
    trainer.close()
    assert (trainer.run.algo, trainer.config.lr) == ("dqn", 3e-4)


def test_a_config_file_without_algo_needs_the_algorithm_named(tmp_path, capsys):
    """A file with no 'algo' key and no algorithm argument says how to name one; with the argument it trains."""
    f = tmp_path / "run.yaml"
    f.write_text("env: CartPole-v1\n")
    code, _, err = run_cli(capsys, "train", "-f", str(f), "--quiet")
    assert_one_line_error(code, err, "has no 'algo' key", f"canter train ALGO -f {f}")
    assert main(["train", "ppo", "-f", str(f), "--run-dir", str(tmp_path / "run"), *TINY_ARGV]) == 0
    f.write_text("algo: [ppo]\n")  # was "has no 'algo' key"
    code, _, err = run_cli(capsys, "train", "-f", str(f), "--quiet")
    assert_one_line_error(code, err, "'algo' in", "must be an algorithm name (e.g. 'ppo'; canter list shows them), got a list (['ppo'])")


def test_init_from_is_recorded_where_it_is(tmp_path, monkeypatch):
    """A relative init_from went into config.yaml as given: '-f RUN/config.yaml' from another directory was refused
    ('no such run directory or checkpoint'). It is recorded absolute, as dataset is."""
    monkeypatch.chdir(tmp_path)
    run, _ = canter.config.resolve_config("ppo", "CartPole-v1", sets=["init_from=runs/source"])
    assert run.init_from == str(tmp_path / "runs" / "source")


@pytest.mark.parametrize("text, where", [("hparams:\n\tlr: 0.001\n", "line 2, column 1"),
                                         ("lr:\t0.001\n", "line 1, column 4")])
def test_a_tab_in_a_config_file_is_named(tmp_path, text, where):
    """A tab indenting a line, or after a key's colon (PyYAML takes neither), was PyYAML's "found character '\\t'
    that cannot start any token"; the error says it is a tab and to use spaces."""
    f = tmp_path / "run.yaml"
    f.write_text(text)
    with pytest.raises(CanterError, match=f"{where}: a tab, which YAML does not take for indentation.*use spaces"):
        load_yaml(f)
    with pytest.raises(CanterError, match="'env_kwargs': cannot parse .* a tab, .*use spaces"):
        parse_yaml_value("{a:\t1}", "env_kwargs")


def test_set_reaches_into_a_mapping_setting(tmp_path):
    """--set env_kwargs.max_episode_steps=100 was an unknown key ('did you mean env_kwargs?'), hooks.after_update one
    with '80 choices': a file's env_kwargs could only be replaced whole from the command line. A dotted key sets one
    entry, over the entries the layers below gave."""
    f = tmp_path / "run.yaml"
    f.write_text("env_kwargs: {max_episode_steps: 50, sutton_barto_reward: true}\n")
    run, _ = canter.config.resolve_config("ppo", "CartPole-v1", f, sets=[
        "env_kwargs.max_episode_steps=1_000", "eval_env_kwargs.render_mode=rgb_array",
        "hooks.after_update=my_pkg.hooks:log"])
    assert run.env_kwargs == {"max_episode_steps": 1000, "sutton_barto_reward": True}
    assert (run.eval_env_kwargs, run.hooks) == ({"render_mode": "rgb_array"}, {"after_update": "my_pkg.hooks:log"})
    run, _ = canter.config.resolve_config("ppo", "pettingzoo:tests.mixed_agents", sets=[
        "policies=type", "policy_hparams={a: {lr: 0.1}}", "policy_hparams.a.n_epochs=3", "policy_hparams.b.lr=1e-3"])
    assert run.policy_hparams == {"a": {"lr": 0.1, "n_epochs": 3}, "b": {"lr": 0.001}}
    with pytest.raises(CanterError, match=r"'seed.x': 'seed' is an int, not a mapping .*--set seed=VALUE"):
        canter.config.resolve_config("ppo", "CartPole-v1", sets=["seed.x=1"])
    with pytest.raises(CanterError, match=r"'env_kwargs.max_episode_steps.x': 'env_kwargs.max_episode_steps' is 50, "
                                          r"not a mapping"):
        canter.config.resolve_config("ppo", "CartPole-v1", f, sets=["env_kwargs.max_episode_steps.x=1"])


def _aliases(levels: int) -> str:
    """A flow list of ten aliases of the level below, ``levels`` deep over ten ones: 10**(levels + 1) values."""
    lines = ["l0: &l0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return "{" + ", ".join(lines) + "}"


def test_aliases_that_expand_to_a_billion_values_are_refused(tmp_path):
    """541 bytes of anchors and aliases (ten aliases of the level below, nine levels) hung 'canter train -f' in
    canter's walk over the values (the loader shares aliased lists; every check of the values copies them)."""
    f = tmp_path / "run.yaml"
    f.write_text(f"env_kwargs: {_aliases(8)}\n")
    with pytest.raises(CanterError, match="aliases repeat their anchors into more than 1,000,000 values"):
        load_yaml(f)
    with pytest.raises(CanterError, match="'env_kwargs': cannot parse .* more than 1,000,000 values"):
        parse_yaml_value(_aliases(8), "env_kwargs")
    f.write_text(f"env_kwargs: {{layout: {_aliases(3)}}}\n")  # 10,000 values: a big env argument, read as before
    assert len(load_yaml(f)["env_kwargs"]["layout"]["l3"][9][9][9]) == 10


def test_a_runs_checkpoint_json_or_summary_given_as_config_names_its_config_yaml(tmp_path, capsys):
    """-f RUN/checkpoints/last.json (JSON is YAML) was "unknown config key 'format'; did you mean 'flush_denormal'?",
    summary.json "unknown config key 'algorithm'": the error names the run's config.yaml."""
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text("algo: ppo\n")
    (run / "checkpoints" / "last.json").write_text('{"format": "canter-checkpoint", "algorithm": "ppo", "config": {}}')
    (run / "summary.json").write_text('{"algorithm": "ppo", "steps": 1, "wall_seconds": 1.0, "stop_reason": "x"}')
    for name, what in (("checkpoints/last.json", "a checkpoint's metadata"), ("summary.json", "a run's summary")):
        for algo in (["ppo"], []):
            code, _, err = run_cli(capsys, "train", *algo, "-f", str(run / name), "--env", "CartPole-v1", "--quiet")
            assert_one_line_error(code, err, f"is {what}, not a run config: give its run's config (-f "
                                             f"{run / 'config.yaml'})")


def test_a_checkpoints_user_modules_key_in_a_config_points_to_imports():
    """user_modules (what a checkpoint's JSON records beside its config) was answered "did you mean 'lr_schedule'?"."""
    with pytest.raises(CanterError, match=r"unknown config key 'user_modules'; a config lists the modules to import "
                                          r"as 'imports'"):
        canter.config.resolve_config("ppo", "CartPole-v1", sets=["user_modules=[my_pkg.parts]"])


@pytest.mark.parametrize("text, needle", [
    ("lr:0.001\nn_steps:64\n", "must hold a YAML mapping (key: value lines), got str; YAML reads 'lr:0.001'"),
    ("seed: 1\nlr:0.001\n", "line 2: YAML reads 'lr:0.001'"),  # was line 3: could not find expected ':'
    ("hparams:\n  lr:0.001\n  n_steps: 8\n", "line 2: YAML reads 'lr:0.001'"),  # was: mapping values are not allowed
    ("hparams:\n  lr:0.001\n", "'hparams' must be a mapping of hyperparameter names to values; YAML reads 'lr:0.001'"),
    ("env_kwargs:\n  max_episode_steps:200\n", "got 'max_episode_steps:200'; YAML reads 'max_episode_steps:200'"),
])
def test_a_key_written_without_the_space_after_its_colon_is_named(tmp_path, text, needle):
    """'lr:0.001' on its own line is one word to YAML: the errors were about its consequences (a string where a
    mapping was expected, 'could not find expected ':'' a line further) without naming it, as the flow form was."""
    f = tmp_path / "run.yaml"
    f.write_text(text)
    hint = "as one word: a key's colon needs a space after it ("
    with pytest.raises(CanterError, match=re.escape(needle) + ".*" + re.escape(hint)):
        canter.config.resolve_config("ppo", "CartPole-v1", f)


def test_module_class_values_are_not_taken_for_glued_keys(tmp_path):
    """model: pkg.mod:Class, a block list of callbacks and a flow list over several lines are read as before."""
    f = tmp_path / "run.yaml"
    f.write_text("model: canter.models.mlp:ActorCritic\ncallbacks:\n  - a.b:C\nhooks: {after_update: [\n  a.b:f,\n]}\n")
    run, _ = canter.config.resolve_config("ppo", "CartPole-v1", f)
    assert (run.model, run.callbacks, run.hooks) == ("canter.models.mlp:ActorCritic", ["a.b:C"], {"after_update": ["a.b:f"]})
    with pytest.raises(CanterError, match=r"'hooks' must be a dict, got 'my_pkg:fn'$"):  # no hook: not 'my_pkg: fn'
        canter.config.resolve_config("ppo", "CartPole-v1", sets=["hooks=my_pkg:fn"])


def test_a_config_path_that_is_a_run_directory_or_misspelt_names_the_file(tmp_path):
    """-f RUN_DIR was 'cannot read config file RUN_DIR: Is a directory', -f RUN_DIR/config.yml 'config file not
    found' alone: the run's config.yaml is named."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("algo: ppo\n")
    with pytest.raises(CanterError, match=f"config file {run} is a directory; its run config is {run / 'config.yaml'}"):
        load_yaml(run)
    with pytest.raises(CanterError, match=f"not found: {run / 'config.yml'}; did you mean '{run / 'config.yaml'}'"):
        load_yaml(run / "config.yml")
    with pytest.raises(CanterError, match=r"not found: .*nothing\.yaml$"):
        load_yaml(tmp_path / "nothing.yaml")


def test_a_list_written_as_a_python_tuple_is_a_list(tmp_path):
    """net_arch: (64, 64), as Stable-Baselines3's policy_kwargs write it (in a file, --set or --net-arch), was
    "'hparams.net_arch' must be an int, got '(64'"."""
    f = tmp_path / "run.yaml"
    f.write_text("net_arch: (64, 32)\n")
    assert canter.config.resolve_config("ppo", "CartPole-v1", f)[1].net_arch == [64, 32]
    assert canter.config.resolve_config("ppo", "CartPole-v1", sets=["critic_net_arch=(16,)"])[1].critic_net_arch == [16]


def test_a_policys_hyperparameter_of_another_algorithm_names_them():
    """policy_hparams: {a: {tau: 0.01}} for PPO was answered with PPO's close spellings alone ('did you mean lr?'),
    where hparams.tau names the algorithms that have it."""
    with pytest.raises(CanterError, match=r"unknown config key 'policy_hparams.a.tau': ppo has no hyperparameter 'tau', "
                                          r"c51, .*did you mean 'policy_hparams.a.lr'"):
        canter.config.resolve_config("ppo", "pettingzoo:tests.mixed_agents",
                                     sets=["policies=type", "policy_hparams={a: {tau: 0.01}}"])


def test_init_from_under_the_home_directory_is_expanded(tmp_path, monkeypatch):
    """init_from: ~/runs/source in a config file (no shell expands it there) became CWD/~/runs/source."""
    monkeypatch.setenv("HOME", str(tmp_path))
    run, _ = canter.config.resolve_config("ppo", "CartPole-v1", sets=["init_from=~/runs/source"])
    assert run.init_from == str(tmp_path / "runs" / "source")


@pytest.mark.parametrize("text, needle", [
    ("hparams:\n  - lr: 0.001\n  - n_steps: 8\n", "'hparams' must be a mapping of hyperparameter names to values; "),
    ("env_kwargs:\n  - max_episode_steps: 100\n", "'env_kwargs' must be a dict, got [{'max_episode_steps': 100}]; "),
    ("- lr: 0.001\n- n_steps: 8\n", "must hold a YAML mapping (key: value lines), got list; "),
])
def test_a_mapping_written_as_dashed_list_items_says_to_drop_the_dashes(tmp_path, text, needle):
    """A mapping's lines written as list items ('- lr: 0.001') was refused as not a mapping without saying why."""
    f = tmp_path / "run.yaml"
    f.write_text(text)
    with pytest.raises(CanterError, match=re.escape(needle) + r"its entries are written as list items \('- \w+: "
                                                             r"\.\.\.'\): drop the '- ' before each"):
        canter.config.resolve_config("ppo", "CartPole-v1", f)


def test_a_json_config_indented_with_tabs_is_read(tmp_path):
    """JSON is YAML 1.2, but PyYAML takes no tab: a config written by json.dump(..., indent='\\t') was refused (a tab
    at line 2). It is read as JSON, a repeated key refused as in YAML; a tab in YAML proper is still named."""
    import json

    f = tmp_path / "run.json"
    f.write_text(json.dumps({"seed": 3, "hparams": {"lr": 1e-3, "net_arch": [32]}}, indent="\t"))
    run, hp = canter.config.resolve_config("ppo", "CartPole-v1", f)
    assert (run.seed, hp.lr, hp.net_arch) == (3, 1e-3, [32])
    f.write_text('{\n\t"seed": 3,\n\t"seed": 4\n}\n')
    with pytest.raises(CanterError, match="duplicate key 'seed'"):
        load_yaml(f)
