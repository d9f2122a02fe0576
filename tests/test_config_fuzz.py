"""Config fuzzing: random YAML documents and ``--set`` values give a valid run config or a CanterError,
never another exception; a config that passes can be written and read back the way runs do it."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from canter.algorithms.dqn import DQNConfig
from canter.algorithms.ppo import PPOConfig
from canter.config import RunConfig, build, resolve_config, resolved_dict
from canter.errors import CanterError

KEYS = sorted(set(RunConfig.__dataclass_fields__) | set(PPOConfig.__dataclass_fields__)
              | set(DQNConfig.__dataclass_fields__))
NAMES = st.sampled_from(KEYS + ["hparams", "hparams.lr", "hparams.nope", "algo", "lr_scheduel", ""])
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
SCALARS = (st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=True, allow_infinity=True)
           | TEXT | st.sampled_from(["null", "~", "true", "1e400", "[1, 2", "{a: [", "nan", "-0", "0x1F", "3.0",
                                    "linear", "cosine", "stop", "eval", "CartPole-v1", "x:y", "after_update"]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(NAMES | TEXT | st.integers(), inner, max_size=4), max_leaves=12)
DOCS = st.dictionaries(NAMES | TEXT | st.integers() | st.booleans(), VALUES, max_size=6) | VALUES
SETS = st.lists(st.tuples(NAMES | TEXT, SCALARS | VALUES.map(lambda v: yaml.safe_dump(v, default_flow_style=True)))
                .map(lambda kv: f"{kv[0]}={kv[1]}"), max_size=4) | st.lists(TEXT, max_size=3)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check(algo: str, text: str, sets: list[str]) -> None:
    """resolve_config must return a config that survives the run's round trips, or raise CanterError."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "run.yaml"
        path.write_text(text)
        try:
            run, algo_cfg = resolve_config(algo, "CartPole-v1", path, sets)
        except CanterError as exc:
            assert str(exc).strip()  # a message to print
            return
    config = resolved_dict(run, algo_cfg)
    yaml.safe_load(yaml.safe_dump(config))  # config.yaml
    back = json.loads(json.dumps(config, allow_nan=False))  # checkpoint metadata: no NaN, string keys only
    hp_values = back.pop("hparams")
    assert build(RunConfig, back) == run  # what canter.load / --resume rebuild
    assert build(type(algo_cfg), hp_values, section="hparams.") == algo_cfg


@FUZZ
@given(doc=DOCS, sets=SETS, algo=st.sampled_from(["ppo", "dqn"]))
def test_random_yaml_documents_and_sets_never_raise_anything_else(doc, sets, algo):
    check(algo, yaml.safe_dump(doc), sets)


@FUZZ
@given(text=st.text(max_size=80), algo=st.sampled_from(["ppo", "dqn"]))
def test_random_yaml_text_never_raises_anything_else(text, algo):
    check(algo, text, [])


@pytest.mark.parametrize("text", [
    "lr: .nan", "lr: .inf", "max_steps: 1e400", "seed: 99999999999999999999", "5: 3", "? [1, 2]\n: 3",
    "env_kwargs: {1: 2}", "env_kwargs: {a: 2020-01-01}", "net_arch: [64, .nan]", "hparams: {lr: [1]}",
    "!!python/object/apply:os.system ['true']", "callbacks: [{'a:B': {}, 'c:D': {}}]", "hooks: {1: 'a:b'}",
    "max_seconds: -1",
])
def test_known_bad_documents_are_clear_errors(text):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "run.yaml"
        path.write_text(text)
        with pytest.raises(CanterError):
            resolve_config("ppo", "CartPole-v1", path)


def test_env_must_be_a_string():
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "run.yaml"
        path.write_text("env: [CartPole-v1]")
        with pytest.raises(CanterError, match="environment id string"):
            resolve_config("ppo", None, path)


@pytest.mark.parametrize("item", ["net_arch=[1,", "env_kwargs={a: [", "lr=nan", "lr=1e999", "max_steps=1e400",
                                  "seed=-1", "=3", "lr", "hparams.=1"])
def test_known_bad_sets_are_clear_errors(item):
    with pytest.raises(CanterError):
        resolve_config("ppo", "CartPole-v1", sets=[item])
