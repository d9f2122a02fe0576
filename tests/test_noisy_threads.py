"""NoisyNet's mean-weight policy (``noiseless``) under concurrent calls from several threads."""
from __future__ import annotations

import threading

import numpy as np
import torch

import canter
from canter.models.noisy import noiseless, noisy_layers


def test_overlapping_predicts_in_two_threads_leave_the_noise_on():
    """Two threads' ``predict`` (mean weights) overlapping, the first to enter leaving first: the second had seen
    the noise already off and put that back on leaving, so the agent explored (trained) without noise for good."""
    agent = canter.make_trainer("dqn", "CartPole-v1", seed=0, noisy=True, net_arch=[8], quiet=True).agent
    algo = agent.algorithm
    real, both_inside, first_left = algo.q.value, threading.Barrier(2, timeout=10), threading.Event()

    def value(obs: torch.Tensor) -> torch.Tensor:
        out = real(obs)
        both_inside.wait()
        if threading.current_thread().name == "second":
            assert first_left.wait(10)
        return out

    algo.q.value = value
    obs = np.zeros((1, 4), np.float32)
    errors: list[BaseException] = []

    def predict(name: str) -> None:
        try:
            agent.predict(obs)
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)
        if name == "first":
            first_left.set()

    threads = [threading.Thread(target=predict, args=(name,), name=name) for name in ("first", "second")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not errors
    assert all(layer.noise_on for layer in noisy_layers(algo.q))


def test_a_noiseless_block_switches_the_noise_off_in_its_own_thread_only():
    agent = canter.make_trainer("dqn", "CartPole-v1", seed=0, noisy=True, net_arch=[8], quiet=True).agent
    layer = noisy_layers(agent.algorithm.q)[0]
    seen: list[bool] = []
    with noiseless(agent.algorithm.q):
        assert not layer.noise_on
        other = threading.Thread(target=lambda: seen.append(layer.noise_on))
        other.start()
        other.join(10)
    assert seen == [True] and layer.noise_on
    layer.noise_on = False  # the layer's own switch still holds for every thread
    other = threading.Thread(target=lambda: seen.append(layer.noise_on))
    other.start()
    other.join(10)
    assert seen == [True, False]
