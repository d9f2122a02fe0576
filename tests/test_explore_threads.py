"""``agent.explore(obs, generator=g)`` swaps the algorithm's generator for ``g`` and back; called from several threads
at once (``canter.evaluate(agent, deterministic=False)`` in each, a server's workers), a call's restore could put back
another call's generator, so the agent drew from one caller's generator for good (its own stream lost), and a call
could draw from another thread's generator. The swap is now held under a lock (canter.agents.agent.EXPLORE_LOCK)."""
import threading

import numpy as np
import pytest
import torch

from support import untrained_agent

pytestmark = pytest.mark.filterwarnings("ignore:.*(less than one (rollout|training phase)|never learns).*")

THREADS, CALLS = 4, 300


def _explore_in_threads(agent, obs, calls=CALLS):
    """Each thread's actions from ``CALLS`` explores with a generator of its own (seeded with its index)."""
    gens = [torch.Generator().manual_seed(k) for k in range(THREADS)]
    out = [[] for _ in range(THREADS)]
    start = threading.Barrier(THREADS)

    def work(k):
        start.wait()
        for _ in range(calls):
            out[k].append(agent.explore(obs, generator=gens[k]))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return gens, out


@pytest.mark.parametrize("algo, env", [("ppo", "Pendulum-v1"), ("recurrent_ppo", "Pendulum-v1")])
def test_explore_from_several_threads_keeps_each_callers_generator_apart(algo, env):
    agent = untrained_agent(algo, env, n_envs=1, n_steps=64)
    own = agent.algorithm.generator
    obs = np.zeros((8, 3), np.float32)
    _, out = _explore_in_threads(agent, obs, CALLS if algo == "ppo" else CALLS // 3)  # an LSTM's call is slower
    assert agent.algorithm.generator is own  # was a thread's generator, kept for good
    if algo == "ppo":  # each thread's actions are its own generator's draws, as one thread alone draws them
        for k in range(THREADS):
            alone = torch.Generator().manual_seed(k)
            want = [agent.explore(obs, generator=alone) for _ in range(CALLS)]
            assert all(np.array_equal(a, b) for a, b in zip(out[k], want)), k
