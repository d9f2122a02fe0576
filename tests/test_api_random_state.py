"""The caller's global random states survive canter's first use (``canter.train`` (the attribute) imports
canter.api, whose console logger imports rich, which draws ``random.getrandbits(24)`` as it imports) and an
algorithm's construction, whose seed alone decides its initial weights."""
import random
import sys
from typing import TYPE_CHECKING

import canter

if TYPE_CHECKING:  # torch is imported inside the tests: these check what importing canter draws
    import torch


def test_importing_a_public_name_leaves_pythons_random_state(tmp_path, monkeypatch):
    (tmp_path / "draws_on_import.py").write_text("import random\nID = random.getrandbits(24)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "draws_on_import", raising=False)
    random.seed(7)
    want = random.random()
    random.seed(7)
    canter._import_deferring_gc("draws_on_import")  # what canter.train's first access does for canter.api
    assert random.random() == want


def _weights(algorithm) -> "torch.Tensor":
    import torch

    return torch.cat([p.detach().flatten() for m in algorithm.modules().values() for p in m.parameters()])


def _built(algo: str, seed, **kw):
    """``algo`` for CartPole built directly (no trainer), as ``canter.algorithms``' classes are."""
    from canter.config import resolve_config
    from canter.envs.make import make_vec_env
    from canter.registry import lookup

    env = make_vec_env("CartPole-v1", 1)
    _, cfg = resolve_config(algo, "CartPole-v1")
    try:
        return lookup("algorithm", algo)(env.single_observation_space, env.single_action_space, cfg, seed=seed, **kw)
    finally:
        env.close()


def test_an_algorithm_built_with_a_seed_has_that_seeds_weights_and_leaves_the_global_streams():
    """PPO(..., seed=1) built twice had different weights: only the trainer seeded torch's global stream, from which
    the models initialise; the build drew on (and advanced) the caller's. Now the seed seeds the weights, as the
    trainer's run of that seed has them, and the caller's Python, NumPy and torch states are left as they were."""
    import numpy as np
    import torch
    from support import untrained_agent

    for algo in ("ppo", "dqn"):
        random.seed(5), np.random.seed(5), torch.manual_seed(5)
        states = random.getstate(), np.random.get_state()[1].copy(), torch.get_rng_state()
        first, again, other = _built(algo, 1), _built(algo, 1), _built(algo, 2)
        assert torch.equal(_weights(first), _weights(again))
        assert not torch.equal(_weights(first), _weights(other))
        assert random.getstate() == states[0] and (np.random.get_state()[1] == states[1]).all()
        assert torch.equal(torch.get_rng_state(), states[2])
    assert torch.equal(_weights(_built("ppo", 0)), _weights(untrained_agent("ppo", "CartPole-v1", max_steps=512).algorithm))


def test_an_algorithm_built_without_a_seed_draws_its_weights_from_torchs_stream():
    """seed=None (Stable-Baselines3's): the weights follow torch's global stream, which the build advances."""
    import torch

    torch.manual_seed(3)
    first, second = _built("ppo", None), _built("ppo", None)
    torch.manual_seed(3)
    assert torch.equal(_weights(first), _weights(_built("ppo", None)))
    assert not torch.equal(_weights(first), _weights(second))
