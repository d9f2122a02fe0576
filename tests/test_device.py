"""The ``device`` run option on any machine: ``auto``, refusals of a missing or misspelled device, and
where a checkpoint loads (tests/test_cuda.py trains on a GPU). torch is made to report no GPU, so these
behave the same on machines with one."""
from __future__ import annotations

import json

import pytest
import torch

import canter
from canter.devices import load_device, resolve_device
from canter.errors import CanterError
from checkpoint_support import write_checkpoint_json
from support import assert_one_line_error, run_cli

TINY = dict(max_steps=64, n_envs=1, n_steps=32, batch_size=32, n_epochs=1, eval_every=0, eval_episodes=1)


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_auto_resolves_to_cpu_without_a_gpu_and_the_run_records_it(no_gpu, tmp_path):
    assert resolve_device("auto") == "cpu" and resolve_device(" CPU ") == "cpu"
    agent = canter.train("ppo", env="CartPole-v1", device="auto", run_dir=tmp_path / "run", **TINY)
    assert agent.algorithm.device == torch.device("cpu")
    assert "device: cpu" in (tmp_path / "run" / "config.yaml").read_text().splitlines()
    assert canter.load(tmp_path / "run").run_config.device == "cpu"


def test_make_trainer_takes_a_torch_device_as_load_does(no_gpu):
    """SB3's device=th.device(...): make_trainer said "'device' must be a str", canter.load took it."""
    trainer = canter.make_trainer("ppo", "CartPole-v1", device=torch.device("cpu"), **TINY)
    trainer.close()
    assert trainer.run.device == "cpu" and trainer.agent.algorithm.device == torch.device("cpu")
    with pytest.raises(CanterError, match="no CUDA support here|finds no CUDA GPU"):
        canter.make_trainer("ppo", "CartPole-v1", device=torch.device("cuda"), **TINY)


@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_a_gpu_asked_for_where_there_is_none_is_refused_in_one_line(no_gpu, device, capsys, tmp_path):
    with pytest.raises(CanterError, match=f"'device' is '{device}' but .* here; use device=cpu, or device=auto"):
        canter.make_trainer("ppo", env="CartPole-v1", device=device)
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", f"device={device}",
                           "--run-dir", str(tmp_path / "run"))
    assert_one_line_error(code, err, f"'device' is '{device}'", "device=cpu", "device=auto")
    assert not (tmp_path / "run").exists()


def test_train_takes_a_device_flag(no_gpu, capsys, tmp_path):
    """``canter train --device`` sets the run's device, as ``--set device=`` does (eval and play have the flag)."""
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--device", "cuda", "--run-dir",
                           str(tmp_path / "refused"))
    assert_one_line_error(code, err, "'device' is 'cuda'", "device=cpu")
    assert not (tmp_path / "refused").exists()
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--device", "auto", "--max-steps", "64",
                           "--n-envs", "1", "--eval-every", "0", "--eval-episodes", "1", "--set", "hparams.n_steps=32",
                           "--set", "hparams.batch_size=32", "--quiet", "--run-dir", str(tmp_path / "run"))
    assert code == 0, err
    assert "device: cpu" in (tmp_path / "run" / "config.yaml").read_text().splitlines()


@pytest.mark.parametrize("device, near", [("gpu", "'cuda'"), ("cuda:abc", "'cuda"), ("cpu0", "'cpu'")])
def test_a_misspelled_device_is_refused_with_the_closest_choice(device, near, capsys):
    with pytest.raises(CanterError, match=f"unknown value for 'device' '{device}'; did you mean {near}"):
        resolve_device(device)
    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", "--set", f"device={device}")
    assert_one_line_error(code, err, f"unknown value for 'device' '{device}'", near)


def test_a_checkpoint_loads_on_its_device_if_present_else_the_cpu(no_gpu, tmp_path):
    assert load_device("cuda", None) == "cpu" and load_device("cuda:1", None) == "cpu"  # trained on a GPU
    assert load_device("cpu", None) == "cpu" and load_device(None, None) == "cpu"
    assert load_device("cuda", "cpu") == "cpu" and load_device("cpu", "auto") == "cpu"
    canter.train("ppo", env="CartPole-v1", run_dir=tmp_path / "run", **TINY)
    assert canter.load(tmp_path / "run", device="cpu").algorithm.device == torch.device("cpu")
    with pytest.raises(CanterError, match="'device' is 'cuda' but"):
        canter.load(tmp_path / "run", device="cuda")


def test_eval_and_play_take_a_device(no_gpu, tmp_path, capsys):
    canter.train("ppo", env="CartPole-v1", run_dir=tmp_path / "run", **TINY)
    code, out, err = run_cli(capsys, "eval", str(tmp_path / "run"), "--episodes", "1", "--device", "cpu", "--json")
    assert code == 0, err
    for command in ("eval", "play"):
        code, _, err = run_cli(capsys, command, str(tmp_path / "run"), "--episodes", "1", "--device", "cuda")
        assert_one_line_error(code, err, "'device' is 'cuda' but", "device=cpu")


def test_a_run_on_a_device_missing_here_is_not_resumed(no_gpu, tmp_path, capsys):
    """A resume continues on the run's own device (exact resume): one line saying so, nothing written."""
    def interrupt(trainer, losses):
        trainer.stop_requested = "interrupted"

    canter.train("ppo", env="CartPole-v1", run_dir=tmp_path / "part", hooks={"after_update": interrupt}, **TINY)
    config = tmp_path / "part" / "config.yaml"
    config.write_text(config.read_text().replace("device: cpu", "device: cuda"))
    last = tmp_path / "part" / "checkpoints" / "last.json"
    meta = json.loads(last.read_text())
    meta["config"]["device"] = "cuda"
    write_checkpoint_json(last, meta)
    code, _, err = run_cli(capsys, "train", "--resume", str(tmp_path / "part"))
    assert_one_line_error(code, err, f"cannot resume '{tmp_path / 'part'}' on this machine: it trains on 'cuda'",
                          "device=cpu")


def test_the_callers_cuda_generators_keep_their_seed_when_cuda_starts_inside(monkeypatch):
    """canter.train / load keep the caller's random states (utils.global_rngs_kept). CUDA not started yet has
    no state to save: its generators start from the last torch.manual_seed when it starts. A run seeding torch
    inside (and maybe starting CUDA, training on a GPU) must leave that seed, not its own, for the caller."""
    from canter.utils import global_rngs_kept

    seeds: list[int] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setattr(torch.cuda, "manual_seed_all", seeds.append)  # what torch.manual_seed calls for CUDA
    state = torch.get_rng_state()
    try:
        torch.manual_seed(11)  # the caller's seed
        with global_rngs_kept():
            torch.manual_seed(1234)  # the run's
        assert seeds == [11, 1234, 11] and torch.initial_seed() == 11  # CUDA's queued seed: the caller's again
    finally:
        torch.set_rng_state(state)
