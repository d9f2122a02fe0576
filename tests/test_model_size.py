"""A model too big for the machine is refused in one line before any of its memory is allocated."""

from __future__ import annotations

import gymnasium as gym
import pytest
import torch

from canter.model_size import check_model_fits, device_memory_bytes, model_bytes_on_meta
from canter.models.mlp import ActorCritic
from support import assert_train_refused

BOX, TWO = gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2)


def test_a_model_of_more_weights_than_memory_is_refused(capsys, tmp_path):
    """net_arch=[1e9] allocated ~16 GB for real and filled it in for minutes (orthogonal init) before anything
    failed; it is now counted on torch's meta device and refused at once."""
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", "CartPole-v1", "--set",
                                            "net_arch=[10000000000]"], "its weights need")


def test_the_check_uses_the_device_memory(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr("canter.model_size.device_memory_bytes", lambda device: 2**20)  # a 1 MiB machine
    assert_train_refused(capsys, tmp_path, ["train", "dqn", "--env", "CartPole-v1", "--set", "net_arch=[100000]"],
                         "more memory than there is")


def test_counting_on_meta_allocates_nothing_and_draws_no_random_numbers():
    state = torch.get_rng_state()
    size = model_bytes_on_meta(lambda: ActorCritic(BOX, TWO, net_arch=[64, 64]))
    assert torch.equal(state, torch.get_rng_state())
    real = ActorCritic(BOX, TWO, net_arch=[64, 64])
    assert size == sum(p.numel() * p.element_size() for p in [*real.parameters(), *real.buffers()])


def test_a_model_that_fits_passes_and_one_that_cannot_be_built_on_meta_is_not_checked():
    check_model_fits(lambda: ActorCritic(BOX, TWO, net_arch=[64]), torch.device("cpu"), "model", "")

    def fails():
        raise RuntimeError("not on meta")

    assert model_bytes_on_meta(fails) is None
    check_model_fits(fails, torch.device("cpu"), "model", "")
    assert device_memory_bytes(torch.device("cpu")) > 2**20


@pytest.mark.parametrize("kind", ["mps", "meta"])
def test_an_unknown_device_memory_is_not_checked(kind):
    assert device_memory_bytes(torch.device(kind)) is None


def test_a_c51_model_is_counted_on_meta():
    """CategoricalQNetwork checked its support's values on the device it was built on: on meta (no values) the
    count failed, so c51's net_arch went unchecked."""
    from canter.models.distributional import CategoricalQNetwork

    assert model_bytes_on_meta(lambda: CategoricalQNetwork(BOX, TWO, net_arch=[64], n_atoms=51)) is not None
