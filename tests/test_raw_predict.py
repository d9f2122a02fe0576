"""agent.predict (and explore, predict_with_state) take raw Dict / Tuple / MultiDiscrete observations, as an
unwrapped env gives them (Stable-Baselines3's model.predict takes dict observations): one, a dict of [B, ...]
entries (SB3's VecEnv form), or a list, packed as training packed them (canter.envs.raw_observations), from the
agent's packed_layout, so also after save and load."""
from __future__ import annotations

import importlib
import json

import gymnasium as gym
import numpy as np
import pytest

import canter
from canter.envs.packing import ObservationPacker
from canter.errors import CanterError
from checkpoint_support import write_checkpoint_json
from support import untrained_agent

ENVS = {"dict": ("structured_env:NestedPick-v0", {}), "tuple": ("masked_env:DictPick-v0", {"tuple_obs": True}),
        "multidiscrete": ("structured_env:CodePick-v0", {}), "masked": ("masked_env:DictPick-v0", {"masked": True}),
        "image": ("image_dict_env:DictImageCue-v0", {}), "image_float": ("image_dict_env:DictImageCue-v0",
                                                                          {"float_flip": True})}


def _env_and_packer(name: str) -> tuple[gym.Env, ObservationPacker]:
    env_id, kwargs = ENVS[name]
    module, env_id = env_id.split(":")
    importlib.import_module(module)  # registers its envs
    env = gym.make(env_id, **kwargs).unwrapped
    return env, ObservationPacker(env.observation_space, env.action_space)


def _stacked(observations: list) -> object:
    """A batch of raw observations in the vector-env form: a dict (tuple) of [B, ...] arrays."""
    first = observations[0]
    if isinstance(first, dict):
        return {k: _stacked([o[k] for o in observations]) for k in first}
    if isinstance(first, tuple):
        return tuple(_stacked([o[i] for o in observations]) for i in range(len(first)))
    return np.stack([np.asarray(o) for o in observations])


def _saved(name: str, path) -> tuple[canter.agents.Agent, object]:
    """An untrained DQN agent of env ``name`` and the path it was saved at."""
    env_id, kwargs = ENVS[name]
    trainer = canter.make_trainer("dqn", env_id, env_kwargs=kwargs, seed=0, max_steps=64, learning_starts=32)
    saved = trainer.agent.save(path)  # while its trainer holds the run's metadata
    trainer.close()
    return trainer.agent, saved


@pytest.fixture(scope="module", params=list(ENVS))
def case(request, tmp_path_factory):
    agent, path = _saved(request.param, tmp_path_factory.mktemp(request.param) / "agent")
    return request.param, agent, canter.load(path)


def test_raw_observations_act_as_packed_ones(case):
    name, agent, loaded = case
    env, packer = _env_and_packer(name)
    raw = [env.reset(seed=i)[0] for i in range(32)]
    packed = np.stack([packer(o) for o in raw])
    for a in (agent, loaded):
        for given in (_stacked(raw), raw) if name != "multidiscrete" else (_stacked(raw), list(_stacked(raw))):
            x, single = a.as_batch(given)  # the vectors training packed, bit for bit
            assert not single and x.dtype == packed.dtype
            np.testing.assert_array_equal(x, packed)
        expected = a.predict(packed)
        for i, o in enumerate(raw):
            assert a.predict(o) == expected[i] and np.ndim(a.predict(o)) == 0
        np.testing.assert_array_equal(a.predict(_stacked(raw)), expected)  # SB3's VecEnv form
        if name != "multidiscrete":  # a list of observations (a list of MultiDiscrete ones is an array)
            np.testing.assert_array_equal(a.predict(raw), expected)
        assert a.explore(raw[0]) in env.action_space and a.predict(raw[0], deterministic=False) in env.action_space


def test_a_multidiscrete_observation_batch_as_an_array():
    env, packer = _env_and_packer("multidiscrete")
    agent = untrained_agent("ppo", ENVS["multidiscrete"][0], n_envs=2, n_steps=8, batch_size=16, net_arch=[16])
    raw = np.stack([env.reset(seed=i)[0] for i in range(8)])
    assert raw.shape == (8, 2) and agent.observation_space.shape == (7,)
    np.testing.assert_array_equal(agent.predict(raw), agent.predict(np.stack([packer(o) for o in raw])))
    np.testing.assert_array_equal(agent.predict(list(raw)), agent.predict(raw))


def test_recurrent_predict_with_state_takes_raw_observations():
    env, packer = _env_and_packer("dict")
    agent = untrained_agent("recurrent_ppo", ENVS["dict"][0], n_envs=2, n_steps=8, batch_size=16, lstm_hidden=8)
    raw = [env.reset(seed=i)[0] for i in range(4)]
    packed = np.stack([packer(o) for o in raw])
    a_raw, s_raw = agent.predict_with_state(_stacked(raw))
    a_packed, s_packed = agent.predict_with_state(packed)
    np.testing.assert_array_equal(a_raw, a_packed)
    np.testing.assert_array_equal(s_raw[0], s_packed[0])
    assert agent.predict_with_state(raw[0])[0] == agent.predict_with_state(packed[0])[0]
    assert agent.predict(raw[0], episode_start=True) == agent.predict(packed[0], episode_start=True)


@pytest.mark.parametrize("edit, needle", [
    (lambda o: o.pop("box"), "observation entry 'box' (box: Box(2,)) is missing: expected a dict with key 'box' there, "
                             "got keys ['inner', 'pos']"),
    (lambda o: o["inner"].pop("k"), "observation entry 'inner.k' (inner.k: Discrete(4)) is missing"),
    (lambda o: o.update(inner=3), "'inner.k' (inner.k: Discrete(4)) is missing: expected a dict with key 'k' there, "
                                  "got int 3"),
    (lambda o: o.update(box=np.zeros(3)), "'box' (box: Box(2,)) has shape (3,), expected (2,)"),
    (lambda o: o.update(box=np.zeros((1, 2))), "'inner.k' (inner.k: Discrete(4)) has shape (), expected (1,) "
                                               "(a batch of 1, as 'box' has shape (1, 2))"),
    (lambda o: o.update(pos=1), "'pos' (pos: Discrete(3, start=-2)) holds 1 where the values are whole numbers -2..0"),
    (lambda o: o.update(pos=-0.5), "holds -0.5 where the values are whole numbers -2..0"),
    (lambda o: o["inner"].update(v="abc"), "'inner.v' (inner.v: Box(3,)) must be numbers"),
], ids=["missing", "nested-missing", "not-a-dict", "shape", "batch-mismatch", "outside-discrete", "fraction",
        "not-numbers"])
def test_a_raw_observation_that_does_not_fit_names_its_entry(edit, needle):
    env, _ = _env_and_packer("dict")
    agent = untrained_agent("dqn", ENVS["dict"][0], n_envs=1, net_arch=[16], learning_starts=32)
    obs = env.reset(seed=0)[0]
    edit(obs)
    with pytest.raises(CanterError) as err:
        agent.predict(obs)
    assert needle in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_other_raw_errors():
    agent = untrained_agent("dqn", ENVS["masked"][0], env_kwargs={"masked": True}, n_envs=1, net_arch=[16],
                            learning_starts=32)
    env, _ = _env_and_packer("masked")
    obs = env.reset(seed=0)[0]
    with pytest.raises(CanterError, match="'action_mask' .* is missing"):
        agent.predict({k: v for k, v in obs.items() if k != "action_mask"})
    with pytest.raises(CanterError, match=r"'action_mask' .* has shape \(3,\), expected \(4,\)"):
        agent.predict({**obs, "action_mask": np.ones(3)})
    with pytest.raises(CanterError, match=r"observation 1: observation entry 'target' .* has shape \(2,\), expected \(\)"):
        agent.predict([obs, {**obs, "target": np.array([1, 2])}])
    with pytest.raises(CanterError, match=r"'noise' .* has shape \(2,\), expected \(3, 2\)"):  # flags: a batch of 3
        agent.predict({k: np.stack([v] * 3) if k == "flags" else v for k, v in obs.items()})
    codes = untrained_agent("dqn", ENVS["multidiscrete"][0], n_envs=1, net_arch=[16], learning_starts=32)
    with pytest.raises(CanterError, match=r"the observation \(MultiDiscrete\(\[3, 4\], start=\[1, 0\]\)\) holds 0 "
                                          r"where the values are whole numbers 1..3"):
        codes.predict(np.array([0, 2]))


def test_a_checkpoint_without_a_layout_keeps_the_packing_error(tmp_path):
    """A checkpoint written before layouts were recorded: the structure is unknown, so the same error as before."""
    _, path = _saved("dict", tmp_path / "old")
    meta_path = tmp_path / "old.json"
    meta = json.loads(meta_path.read_text())
    assert '"layout"' in json.dumps(meta)
    write_checkpoint_json(meta_path, _without_layout(meta))
    old = canter.load(path)
    env, _ = _env_and_packer("dict")
    with pytest.raises(CanterError, match=r"^observations must be numeric arrays of shape \(12,\) .* first: wrap the "
                                          r"env in canter.envs.packing.pack_observations\(env\)$"):
        old.predict(env.reset(seed=0)[0])


def _without_layout(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_layout(v) for k, v in value.items() if k != "layout"}
    if isinstance(value, list):
        return [_without_layout(v) for v in value]
    return value


def test_a_reset_pair_of_a_dict_env_is_still_named():
    """env.reset()'s (obs, info) given whole to a Dict env's agent: the hint to pass the observation alone."""
    agent = untrained_agent("dqn", ENVS["dict"][0], n_envs=1, net_arch=[16], learning_starts=32)
    env, _ = _env_and_packer("dict")
    pair = env.reset(seed=0)
    with pytest.raises(CanterError, match=r"pass the observation alone \(obs, info = env\.reset\(\)\)$"):
        agent.predict(pair)
    assert agent.predict(pair[0]) in env.action_space


def test_one_multidiscrete_observation_as_a_python_list(tmp_path):
    """[1, 2] for a MultiDiscrete([3, 4], start=[1, 0]) observation was read as a list of two observations:
    "observation 0: the observation (MultiDiscrete(...)) has shape (), expected (2,)"; a nested list is a batch."""
    agent, path = _saved("multidiscrete", tmp_path / "agent")
    env, packer = _env_and_packer("multidiscrete")
    raw = [env.reset(seed=i)[0] for i in range(4)]
    for a in (agent, canter.load(path)):
        x, single = a.as_batch(raw[0].tolist())
        assert single
        np.testing.assert_array_equal(x, packer(raw[0])[None])
        x, single = a.as_batch([o.tolist() for o in raw])
        assert not single
        np.testing.assert_array_equal(x, np.stack([packer(o) for o in raw]))


def test_one_multidiscrete_observation_as_a_python_tuple(tmp_path):
    """(3, 2) for a MultiDiscrete([3, 4], start=[1, 0]) observation was taken for a Tuple observation and refused
    ("expected one observation of shape (7,) ..., got an array of shape (2,)"), where the same numbers as a list were
    taken; a tuple of tuples is a batch. The reset pair (obs, info) is still named."""
    agent, path = _saved("multidiscrete", tmp_path / "agent")
    env, packer = _env_and_packer("multidiscrete")
    raw = [env.reset(seed=i)[0] for i in range(4)]
    for a in (agent, canter.load(path)):
        x, single = a.as_batch(tuple(raw[0].tolist()))
        assert single
        np.testing.assert_array_equal(x, packer(raw[0])[None])
        x, single = a.as_batch(tuple(tuple(o.tolist()) for o in raw))
        assert not single
        np.testing.assert_array_equal(x, np.stack([packer(o) for o in raw]))
        with pytest.raises(CanterError, match=r"pass the observation alone"):
            a.as_batch(env.reset(seed=0))
