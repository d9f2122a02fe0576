"""An async vector env dropped without ``close()`` (a trainer left to the garbage collector: a function that trains and
returns the agent) ends its workers. Gymnasium's ``AsyncVectorEnv.__del__`` terminates them with SIGTERM and joins,
and canter's workers ignore SIGTERM (canter.envs.workers): the process hung in that join for good."""
from __future__ import annotations

import threading

import gymnasium as gym
import pytest

from canter.envs.workers import vector_env


def test_an_async_env_collected_unclosed_ends_its_workers():
    env = vector_env(lambda: gym.make("CartPole-v1"), 2, True, "CartPole-v1")
    # a second one (a trainer's evaluation env), whose workers, forked later, hold the first's pipes open: its workers
    # never saw their pipes close
    other = vector_env(lambda: gym.make("CartPole-v1"), 1, True, "CartPole-v1")
    env.reset(seed=0)
    inner = env.env  # gymnasium's AsyncVectorEnv: what the garbage collector finalizes
    finalizer = threading.Thread(target=inner.__del__, daemon=True)
    finalizer.start()
    finalizer.join(5)
    hung = finalizer.is_alive()
    if hung:  # end the test's workers (and the thread's join) all the same
        for process in inner.processes:
            process.kill()
        finalizer.join(5)
    other.close()
    assert not hung, "AsyncVectorEnv.__del__ waited for workers that ignore its SIGTERM"
    assert not any(process.is_alive() for process in inner.processes)


@pytest.mark.slow  # a fresh process (~5 s): the hang as a user met it
def test_a_trainer_dropped_after_its_loop_does_not_hang_the_process():
    from support import run_python

    done = run_python(
        "import gc, canter\n"
        "def go():\n"
        "    trainer = canter.make_trainer('ppo', 'CartPole-v1', n_envs=2, vectorization='async', max_steps=256,\n"
        "                                  n_steps=128, eval_episodes=2)\n"
        "    for record in trainer():\n"
        "        pass\n"
        "    return trainer.agent\n"
        "agent = go()\n"
        "gc.collect()\n"
        "print('collected', flush=True)\n")
    assert done.returncode == 0 and done.stdout.strip() == "collected", done.stderr
