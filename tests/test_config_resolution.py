"""Config composition and validation: presets, overrides and config files, value coercion, one-line
errors for bad values and YAML, and the shipped presets."""
import re

import pytest

import canter
from canter.config import RunConfig, build, coerce, resolve_config
from canter.yaml_io import load_yaml
from canter.errors import CanterError


def test_preset_is_used_and_overrides_compose(tmp_path):
    run, hp = resolve_config("ppo", "CartPole-v1")
    assert run.n_envs == 16 and hp.n_steps == 32 and run.target_reward == 475  # shipped preset
    f = tmp_path / "run.yaml"
    f.write_text("seed: 3\nhparams:\n  n_steps: 24\n  lr: 0.01\n")
    run, hp = resolve_config("ppo", "CartPole-v1", f, ["lr=0.02", "hparams.n_epochs=3", "max_steps=1e4"], seed=5)
    assert (run.seed, hp.n_steps, hp.lr, hp.n_epochs, run.max_steps) == (5, 24, 0.02, 3, 10000)


def test_a_module_prefixed_env_id_gets_the_env_ids_preset():
    """--env gymnasium:CartPole-v1 (gymnasium's module:EnvId form, which makes CartPole-v1) trained with PPO's
    bare defaults (n_steps 2048, no target reward) where --env CartPole-v1 uses configs/ppo/CartPole-v1.yaml;
    the Atari ids already got theirs (ale_py:ALE/Pong-v5)."""
    plain, prefixed = resolve_config("ppo", "CartPole-v1"), resolve_config("ppo", "gymnasium:CartPole-v1")
    assert (prefixed[0].n_envs, prefixed[0].target_reward, prefixed[1].n_steps) == (16, 475, 32)
    assert prefixed[1] == plain[1] and prefixed[0].env == "gymnasium:CartPole-v1"


def test_the_last_set_wins_over_an_alias_given_between():
    """--set lr=0.1 --set hparams.lr=0.5 --set lr=0.2 is lr 0.2 (the repeated key kept its first place, so the
    alias given between won: 0.5)."""
    _, hp = resolve_config("ppo", "CartPole-v1", sets=["lr=0.1", "hparams.lr=0.5", "lr=0.2"])
    assert hp.lr == 0.2
    _, hp = resolve_config("ppo", "CartPole-v1", sets=["hparams={n_steps: 8}", "n_steps=16", "hparams={n_steps: 32}"])
    assert hp.n_steps == 32


def test_a_config_file_may_name_its_algorithm_in_any_case(tmp_path):
    """'canter train PPO' finds ppo (lookup is case-insensitive), but a file saying 'algo: PPO' was refused for
    'canter train ppo' ("is for algorithm 'PPO', not 'ppo'"); another algorithm still is."""
    f = tmp_path / "run.yaml"
    f.write_text("algo: PPO\nseed: 4\n")
    assert resolve_config("ppo", "CartPole-v1", f)[0].seed == 4
    assert resolve_config("ppo", "CartPole-v1", sets=["algo=Ppo"])[0].algo == "ppo"
    f.write_text("algo: dqn\n")
    with pytest.raises(CanterError, match="is for algorithm 'dqn', not 'ppo'"):
        resolve_config("ppo", "CartPole-v1", f)


def test_a_files_empty_hparams_section_is_no_hyperparameters(tmp_path):
    """'hparams:' with every entry commented out is YAML null: it was refused as not a mapping."""
    f = tmp_path / "run.yaml"
    f.write_text("seed: 4\nhparams:\n  # lr: 0.01\n")
    run, hp = resolve_config("ppo", "CartPole-v1", f)
    assert run.seed == 4 and hp.lr == resolve_config("ppo", "CartPole-v1")[1].lr
    with pytest.raises(CanterError, match="'hparams' must be a mapping"):
        resolve_config("ppo", "CartPole-v1", sets=["hparams=3"])


def test_defaults_without_preset():
    run, hp = resolve_config("dqn", "MountainCar-v0")  # no shipped preset
    assert run.n_envs == 1 and hp.lr == 1e-4


@pytest.mark.parametrize("sets, fragment", [
    (["lrr=0.1"], "did you mean 'lr'"),
    (["hparams.n_step=4"], "hparams.n_steps"),
    (["lr=abc"], "'hparams.lr' must be a float"),
    (["lr=-1"], "'hparams.lr' must be > 0"),
    (["n_envs=0"], "'n_envs' must be >= 1"),
    (["gamma=1.5"], "'hparams.gamma' must be <= 1"),
    (["lr_schedule=linaer"], "did you mean 'linear'"),
    (["net_arch=[64, x]"], "net_arch"),
    (["novalue"], "key=value"),
    # a run key put under hparams is named as one (the closest hyperparameters, 'hparams.n_epochs'..., were offered)
    (["hparams.n_envs=4"], "'hparams.n_envs' is a run setting, not a hyperparameter of ppo: give it at the top level"),
    (["hparams={seed: 3}"], "'hparams.seed' is a run setting"),
])
def test_bad_values_name_the_key(sets, fragment):
    with pytest.raises(CanterError) as exc:
        resolve_config("ppo", "CartPole-v1", sets=sets)
    assert fragment in str(exc.value)


def test_qrdqn_needs_quantiles():
    """qrdqn --n-quantiles 0 trained plain DQN under QR-DQN's name (dqn and rainbow keep 0: plain Q values)."""
    with pytest.raises(CanterError, match="'hparams.n_quantiles' must be >= 1, got 0"):
        resolve_config("qrdqn", "CartPole-v1", sets=["n_quantiles=0"])
    assert resolve_config("rainbow", "CartPole-v1", sets=["n_quantiles=0"])[1].n_quantiles == 0


def test_coerce_types():
    assert coerce(int, "1e5", "k") == 100000
    assert coerce(list[int], "64,64", "k") == [64, 64]
    assert coerce(bool, "false", "k") is False
    assert coerce(float | None, "null", "k") is None
    with pytest.raises(CanterError):
        coerce(int, 1.5, "k")
    with pytest.raises(CanterError):
        coerce(int, True, "k")


def test_set_takes_the_bool_words_a_config_file_takes(tmp_path):
    """'tensorboard: off' in a file is false (YAML 1.1), but --set tensorboard=off and --normalize-obs on were
    refused ('must be a bool, got 'off'')."""
    f = tmp_path / "run.yaml"
    f.write_text("tensorboard: off\nhparams: {normalize_obs: on}\n")
    run, hp = resolve_config("ppo", "CartPole-v1", f)
    assert run.tensorboard is False and hp.normalize_obs is True
    run, hp = resolve_config("ppo", "CartPole-v1", sets=["tensorboard=off", "normalize_obs=On"])
    assert run.tensorboard is False and hp.normalize_obs is True
    with pytest.raises(CanterError, match="'tensorboard' must be a bool, got 'of'"):
        resolve_config("ppo", "CartPole-v1", sets=["tensorboard=of"])
    f.write_text("tensorboard: 0\nhparams: {normalize_obs: 1}\n")  # refused as 'must be a bool', where --set took 0, 1
    run, hp = resolve_config("ppo", "CartPole-v1", f)
    assert run.tensorboard is False and hp.normalize_obs is True
    for value in (2, 1.0):
        with pytest.raises(CanterError, match=f"'tensorboard' must be a bool, got {value}"):
            resolve_config("ppo", "CartPole-v1", tensorboard=value)


def test_malformed_yaml_reports_line(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("seed: 1\nhparams:\n  lr: [1, 2\n  n_steps: 3\n")
    with pytest.raises(CanterError, match=r"line \d+"):
        load_yaml(f)


def test_build_rejects_unknown_keys():
    with pytest.raises(CanterError, match="did you mean 'seed'"):
        build(RunConfig, {"sed": 1})


def test_duplicate_yaml_keys_are_refused_with_their_line(tmp_path):
    """YAML mappings may not repeat a key; PyYAML silently keeps the last one, so 'lr' given twice
    (e.g. a line added at the end of a long file) would override the first without a word."""
    f = tmp_path / "run.yaml"
    f.write_text("seed: 1\nhparams:\n  lr: 0.01\n  n_steps: 8\n  lr: 0.5\n")
    with pytest.raises(CanterError, match=r"run.yaml line 5, column 3: duplicate key 'lr'"):
        load_yaml(f)
    f.write_text("seed: 1\nhparams: {lr: 0.01}\nseed: 2\n")
    with pytest.raises(CanterError, match=r"line 3, column 1: duplicate key 'seed'"):
        resolve_config("ppo", "CartPole-v1", f)
    f.write_text("a: {x: 1}\nb: {x: 2}\n")  # the same key in two mappings is fine
    assert load_yaml(f) == {"a": {"x": 1}, "b": {"x": 2}}


def test_a_recursive_alias_or_a_deep_nesting_is_one_line(tmp_path):
    """'env_kwargs: &a {x: *a}' (a mapping inside itself) and a few hundred nested lists were RecursionError
    tracebacks (in canter's value checks, and in PyYAML's parser)."""
    f = tmp_path / "run.yaml"
    for text in ["env_kwargs: &a {x: *a}\n", "env_kwargs: {x: " + "[" * 500 + "]" * 500 + "}\n"]:
        f.write_text(text)
        with pytest.raises(CanterError, match=r"run.yaml: collections nested more than 100 deep, or an alias"):
            resolve_config("ppo", "CartPole-v1", f)
    f.write_text("base: &b [64, 64]\n")  # an alias used twice is no recursion
    assert load_yaml(f) == {"base": [64, 64]}


def test_type_errors_read_as_english():
    with pytest.raises(CanterError, match="'seed' must be an int, got 'abc'"):
        build(RunConfig, {"seed": "abc"})


def test_set_reaches_every_key_of_the_config():
    """``--set`` has the highest precedence, for the env, a bare-list field and a whole hparams mapping."""
    run, cfg = resolve_config("ppo", None, sets=["env=Pendulum-v1", "hparams={lr: 0.002, n_epochs: 3}",
                                                 "callbacks=['canter.callbacks:StepBudget']"])
    assert run.env == "Pendulum-v1" and cfg.lr == 0.002 and cfg.n_epochs == 3
    assert run.callbacks == ["canter.callbacks:StepBudget"]
    assert resolve_config("ppo", "CartPole-v1", sets=["env=CartPole-v1"])[0].env == "CartPole-v1"
    with pytest.raises(CanterError, match="cannot change the algorithm"):
        resolve_config("ppo", "CartPole-v1", sets=["algo=dqn"])
    with pytest.raises(CanterError, match="disagree"):
        resolve_config("ppo", "CartPole-v1", sets=["env=Pendulum-v1"])


def test_no_shipped_preset_logs_more_than_100k_records():
    """The loggers keep every record's row in memory and rewrite updates.parquet at each flush (and
    TensorBoard takes ~300 bytes a record): DQN's and Rainbow's Atari presets logged every 4-step
    iteration, 2.5 and 12.5 million rows over their budgets, SAC's MuJoCo presets a million. Each
    preset's log_every keeps its budget at 100,000 logged records or fewer."""
    from pathlib import Path

    for path in sorted((Path(canter.__file__).parent / "configs").glob("*/*.yaml")):
        env = {"atari": "ALE/Pong-v5", "ALE-Pong-v5": "ALE/Pong-v5"}.get(path.stem, path.stem)
        run, hp = resolve_config(path.parent.name, env)
        per_iteration = run.n_envs * (getattr(hp, "n_steps", None) or getattr(hp, "train_freq", None) or 1)
        assert run.max_steps / (per_iteration * run.log_every) <= 100_000, path


def test_every_shipped_preset_resolves():
    """Each ``canter/configs/ALGO/ENV.yaml`` is valid for its algorithm (keys, types, ranges, cross-field
    checks); ``atari.yaml`` is checked through an ALE id."""
    from pathlib import Path

    root = Path(canter.__file__).parent / "configs"
    files = sorted(root.glob("*/*.yaml"))
    assert len(files) > 30
    for path in files:
        env = {"atari": "ALE/Pong-v5", "ALE-Pong-v5": "ALE/Pong-v5"}.get(path.stem, path.stem)
        run, hp = resolve_config(path.parent.name, env)
        assert run.algo == path.parent.name, path


def test_exponent_floats_without_a_dot_are_numbers_in_free_form_values(tmp_path):
    """PyYAML's YAML 1.1 rules read ``1e1`` and ``2.5e-3`` (no dot / no exponent sign) as strings: typed fields
    converted them, but ``env_kwargs`` passed ``{'g': '1e1'}`` to Pendulum, whose first step raised a TypeError."""
    from canter.cli import parse_env_kwargs

    f = tmp_path / "run.yaml"
    f.write_text("env_kwargs: {g: 1e1}\nhparams:\n  lr: 2.5e-3\n")
    run, hp = resolve_config("ppo", "Pendulum-v1", f)
    assert run.env_kwargs == {"g": 10.0} and isinstance(run.env_kwargs["g"], float) and hp.lr == 0.0025
    run, _ = resolve_config("ppo", "Pendulum-v1", sets=["env_kwargs={g: 2e1}"])
    assert run.env_kwargs == {"g": 20.0}
    assert parse_env_kwargs("{g: 1E-1}") == {"g": 0.1}
    from canter.yaml_io import dump_yaml, safe_load

    data = {"a": "1e5", "b": 1e5, "c": "x"}  # a string that looks like such a number is quoted in config.yaml
    assert safe_load(dump_yaml(data)) == data


def test_a_hyperparameter_given_twice_in_one_file_is_refused(tmp_path):
    """'lr: 0.1' and 'hparams: {lr: 0.2}' in one file kept whichever came last (0.2 here, 0.1 with the lines
    swapped), as a repeated YAML key would, which is refused; a repeated --set still wins as documented."""
    f = tmp_path / "run.yaml"
    f.write_text("lr: 0.1\nhparams:\n  lr: 0.2\n")
    with pytest.raises(CanterError, match=r"'lr' and 'hparams: \{lr: ...\}' both set 'hparams.lr' in .*run.yaml"):
        resolve_config("ppo", "CartPole-v1", f)
    f.write_text("hparams.gamma: 0.9\ngamma: 0.8\n")
    with pytest.raises(CanterError, match="'hparams.gamma' and 'gamma' both set"):
        resolve_config("ppo", "CartPole-v1", f)
    f.write_text("lr: 0.1\n")  # the file, a flag and --set are layers: each may override the one before
    _, hp = resolve_config("ppo", "CartPole-v1", f, ["hparams.lr=0.3", "lr=0.4"], hparams={"lr": 0.2})
    assert hp.lr == 0.4


def test_values_in_errors_stay_readable(tmp_path):
    """--set seed=1e300 printed the whole 301-digit integer it became, and a 100,000-character value was
    echoed whole: huge integers are shown in exponent form, long values cut."""
    with pytest.raises(CanterError, match=r"'seed' must be <= 4294967295, got 1e\+300$"):
        resolve_config("ppo", "CartPole-v1", sets=["seed=1e300"])
    with pytest.raises(CanterError, match=r"'max_steps' must be >= 1, got -1e\+300$"):
        resolve_config("ppo", "CartPole-v1", sets=["max_steps=-1e300"])
    f = tmp_path / "run.yaml"
    f.write_text("lr: " + "a" * 100_000 + "\n")
    with pytest.raises(CanterError, match=r"'hparams.lr' must be a float, got 'a+\.\.\.$") as exc:
        resolve_config("ppo", "CartPole-v1", f)
    assert len(str(exc.value)) < 200
    with pytest.raises(CanterError, match=r"unknown value for 'hparams.activation' 'x+\.\.\.'; choices") as exc:
        resolve_config("ppo", "CartPole-v1", sets=["activation=" + "x" * 5000])
    assert len(str(exc.value)) < 250


@pytest.mark.parametrize("item", ["net_arch=[64, 1e300]", "n_steps=1e19", "eval_every=2**70"])
def test_integer_settings_must_fit_64_bits(item):
    """net_arch: [1e300] reached torch and came back as a C++ stack trace in one line ('Overflow when unpacking
    long long Exception raised from THPUtils_unpackLong ... frame #0: ...'); n_steps 1e300 printed 301-digit
    warnings. Integer settings are array sizes, counters and seeds: beyond 64 bits they are refused."""
    item = item.replace("2**70", str(2**70))
    key = item.split("=")[0]
    message = rf"'(hparams\.)?{key}' must fit a 64-bit integer \(at most 9.22e\+18 in size\), got [0-9.]+e\+"
    with pytest.raises(CanterError, match=message):
        resolve_config("ppo", "CartPole-v1", sets=[item])
    assert resolve_config("ppo", "CartPole-v1", sets=[f"max_steps={2**63 - 1}"])[0].max_steps == 2**63 - 1


@pytest.mark.parametrize("algo, env, key, limit, meant", [
    ("ppo", "CartPole-v1", "n_epochs", 100_000, 200), ("dqn", "CartPole-v1", "gradient_steps", 10_000_000, 10_000),
    ("sac", "Pendulum-v1", "n_critics", 1_000, 10), ("trpo", "CartPole-v1", "cg_max_steps", 100_000, 100)])
def test_per_iteration_counts_past_any_meant_setting_are_refused(algo, env, key, limit, meant):
    """PPO's n_epochs: 1e9 was taken, and its first iteration never ended; SAC's n_critics: 100000 filled memory.
    Such counts are refused in one line naming the key, the value and the limit; large settings that are meant
    still resolve."""
    with pytest.raises(CanterError, match=rf"^'hparams\.{key}' must be <= {limit}, got {limit + 1}$"):
        resolve_config(algo, env, sets=[f"{key}={limit + 1}"])
    assert getattr(resolve_config(algo, env, sets=[f"{key}={meant}"])[1], key) == meant


@pytest.mark.parametrize("key, limit, meant", [("n_envs", 100_000, 4096), ("eval_envs", 100_000, 64),
                                               ("eval_episodes", 1_000_000, 1000)])
def test_env_and_episode_counts_past_any_meant_setting_are_refused(key, limit, meant):
    """n_envs / eval_envs 1e9 were NumPy's ArrayMemoryError traceback from inside gymnasium's vector env;
    eval_episodes 1e9 hung in the first evaluation."""
    with pytest.raises(CanterError, match=rf"^'{key}' must be <= {limit}, got {limit + 1}$"):
        resolve_config("ppo", "CartPole-v1", sets=[f"{key}={limit + 1}"])
    assert getattr(resolve_config("ppo", "CartPole-v1", sets=[f"{key}={meant}"])[0], key) == meant

def test_a_null_item_reads_as_english():
    """net_arch: [64, null] was refused with ''hparams.net_arch' must be a int, got null'."""
    with pytest.raises(CanterError, match="'hparams.net_arch' must be an int, got null"):
        resolve_config("ppo", "CartPole-v1", sets=["net_arch=[64, null]"])


@pytest.mark.parametrize("item, message", [
    ("imports=null", "'imports' must be a list, got null"),  # was: cannot import module 'null'
    ("imports={a: 1}", "'imports' must be a list of module names"),  # was: cannot import module '{a: 1}'
    ("env_kwargs=null", "'env_kwargs' must be a dict, got null"),  # was: ... got None
    ("callbacks=~", "'callbacks' must be a list, got null"),  # was: the list [None]
])
def test_set_null_and_imports_read_as_a_file_reads_them(item, message):
    """--set KEY=null for a list or mapping is a file's 'KEY: null' (a list's was [null]); --set imports=VALUE is
    read as the run config reads it (it was imported as one module named VALUE unless it began with '[')."""
    with pytest.raises(CanterError, match=f"^{re.escape(message)}"):
        resolve_config("ppo", "CartPole-v1", sets=[item])
    assert resolve_config("ppo", "CartPole-v1", sets=["imports=json, math"])[0].imports == ["json", "math"]


def test_yaml_1_1_octal_and_base_60_numbers_are_refused(tmp_path):
    """'seed: 010' in a file was 8 (YAML 1.1's octal) where --set seed=010 is 10, and 'max_steps: 1:30' was 90
    (base 60), without a word; both are refused naming the number. Quoted, they are text; 0x10 stays 16."""
    f = tmp_path / "run.yaml"
    for text, problem in [("seed: 010\n", r"line 1, column 7: '010' is an octal number in YAML 1.1 \(8\)"),
                          ("max_steps: 1:30\n", r"line 1, column 12: '1:30' is a base-60 number in YAML 1.1 \(90\)"),
                          ("env_kwargs: {a: [1, -0_7]}\n", r"'-0_7' is an octal number")]:
        f.write_text(text)
        with pytest.raises(CanterError, match=problem):
            resolve_config("ppo", "CartPole-v1", f)
    f.write_text("seed: 0x10\nmax_steps: 0\nenv_kwargs: {t: '1:30', n: '010', z: 0.5, w: 09}\n")
    assert load_yaml(f) == {"seed": 16, "max_steps": 0, "env_kwargs": {"t": "1:30", "n": "010", "z": 0.5, "w": "09"}}
    with pytest.raises(CanterError, match=r"'hparams.net_arch': cannot parse '\[064\]' as YAML: '064' is an octal"):
        resolve_config("ppo", "CartPole-v1", sets=["net_arch=[064]"])


def test_a_hyperparameter_of_another_algorithm_is_named_as_one(tmp_path):
    """DQN's preset given to PPO ('canter train ppo -f configs/dqn/CartPole-v1.yaml') was answered "unknown
    hyperparameter 'hparams.buffer_size'; did you mean 'hparams.batch_size'?", and SAC's tau '75 choices': the
    key is now named as other algorithms' hyperparameter; the close spellings stay for a typo (PPO's n_step)."""
    f = tmp_path / "run.yaml"
    f.write_text("hparams:\n  lr: 0.001\n  buffer_size: 100000\n")
    with pytest.raises(CanterError, match=r"^unknown config key 'hparams.buffer_size': ppo has no hyperparameter "
                                          r"'buffer_size', acer, c51, ddpg, dqn and \d+ more have one \(a config "
                                          r"written for another algorithm\?\)"):
        resolve_config("ppo", "CartPole-v1", f)
    with pytest.raises(CanterError, match=r"^unknown config key 'tau': ppo has no hyperparameter 'tau', c51, cql, ddpg, dqn and"):
        resolve_config("ppo", "CartPole-v1", sets=["tau=0.1"])
    with pytest.raises(CanterError, match=r"dqn, .* have one .*; did you mean 'hparams.n_steps'"):
        resolve_config("ppo", "CartPole-v1", sets=["hparams.n_step=4"])


def test_a_set_item_that_is_no_string_is_one_line():
    """make_trainer(sets=[5]) was an AttributeError traceback ('int' object has no attribute 'partition')."""
    with pytest.raises(CanterError, match=r"^--set expects key=value strings, got 5$"):
        resolve_config("ppo", "CartPole-v1", sets=[5])
    with pytest.raises(CanterError, match=r"^--set expects key=value strings, got \('lr', 0.1\)$"):
        canter.make_trainer("ppo", "CartPole-v1", sets=[("lr", 0.1)])


def test_a_config_file_over_the_size_limit_is_refused_unread(tmp_path):
    """-f /dev/zero was read until memory ran out (a MemoryError traceback), and a few megabytes of YAML took
    minutes and gigabytes in PyYAML; files over yaml_io.MAX_BYTES are refused in one line, before parsing."""
    from canter.yaml_io import MAX_BYTES

    f = tmp_path / "run.yaml"
    f.write_text("seed: 1\n" + "#" * MAX_BYTES + "\n")
    for path in (f, "/dev/zero"):
        with pytest.raises(CanterError, match=r"is larger than 1 MiB; a config is a few key: value lines"):
            resolve_config("ppo", "CartPole-v1", path)
    f.write_text("seed: 1\n" + "#" * (MAX_BYTES - 20) + "\n")  # just under: read as before
    assert resolve_config("ppo", "CartPole-v1", f)[0].seed == 1


@pytest.mark.parametrize("algo, value, bound", [("a2c", "-1e300", ">= -20"), ("ppo", "1e300", "<= 20"),
                                                ("sac", "1e39", "<= 20")])
def test_log_std_init_is_bounded(algo, value, bound):
    """log_std_init had no range: -1e300 or 1e300 (beyond float32) was a RuntimeError traceback from torch as the
    policy was built ('value cannot be converted to type float without overflow')."""
    with pytest.raises(CanterError, match=rf"'hparams.log_std_init' must be {bound}, got"):
        resolve_config(algo, "Pendulum-v1", sets=[f"log_std_init={value}"])


@pytest.mark.parametrize("algo, env, item", [("td3", "Pendulum-v1", "target_noise_clip=1e300"),
                                             ("acer", "CartPole-v1", "correction_c=1e300"),
                                             ("ppo", "CartPole-v1", "lr=1e39")])
def test_hyperparameter_floats_must_fit_float32(algo, env, item):
    """td3 --set target_noise_clip=1e300 and acer --set correction_c=1e300 were RuntimeError tracebacks from
    torch ('value cannot be converted to type float without overflow'): hyperparameters meet float32 tensors.
    A run setting (target_reward 1e300) is plain Python and stays free."""
    key = item.split("=")[0]
    with pytest.raises(CanterError, match=rf"'hparams.{key}' must fit a 32-bit float \(at most 3.4e\+38 in size\)"):
        resolve_config(algo, env, sets=[item])
    assert resolve_config("ppo", "CartPole-v1", sets=["target_reward=1e300"])[0].target_reward == 1e300


def test_a_command_option_given_as_a_config_key_is_named_as_one(tmp_path):
    """'run_dir: runs/x' in a -f file (or --set run_dir=...) was answered "unknown config key 'run_dir'; 75 choices"."""
    f = tmp_path / "run.yaml"
    f.write_text("run_dir: runs/x\n")
    with pytest.raises(CanterError, match=r"^unknown config key 'run_dir': it is an option of the command, --run-dir"):
        resolve_config("ppo", "CartPole-v1", f)
    with pytest.raises(CanterError, match=r"'quiet': it is an option of the command, --quiet$"):
        resolve_config("ppo", "CartPole-v1", sets=["quiet=true"])


@pytest.mark.parametrize("item, plain", [("n_steps=010", "10"), ("seed=00", "0"), ("lr=-0_5", "-5"),
                                         ("hparams.n_epochs=007", "7")])
def test_a_number_setting_with_a_leading_zero_is_refused_as_in_a_file(item, plain):
    """'--set n_steps=010' was read as 10 without a word, where a config file's 'n_steps: 010' is refused (YAML 1.1
    reads it as octal 8): now refused too, suggesting the plain number; as is a file's quoted '09' for an int."""
    key = item.split("=")[0]
    with pytest.raises(CanterError, match=rf"^'(hparams\.)?{re.escape(key.removeprefix('hparams.'))}': .* has a "
                                          rf"leading zero, .*octal.*; write {plain}$"):
        resolve_config("ppo", "CartPole-v1", sets=[item])
    with pytest.raises(CanterError, match="leading zero"):
        resolve_config("ppo", "CartPole-v1", hparams={"n_steps": "09"})
    run, hp = resolve_config("ppo", "CartPole-v1", sets=["n_steps=10", "seed=0", "lr=00.5", "n_epochs=1e1"])
    assert (hp.n_steps, run.seed, hp.lr, hp.n_epochs) == (10, 0, 0.5, 10)


