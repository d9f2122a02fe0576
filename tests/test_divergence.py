"""The divergence guard: injected NaNs stop the update before it is applied and leave a consistent run."""
from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

import canter
from canter.callbacks import FunctionHook
from canter.checkpoint import load_checkpoint
from canter.errors import CanterError
from canter.cli import main
from canter.registry import register
from canter.trainers.guard import TrainingDiverged

ROOT = Path(canter.__file__).resolve().parents[1]

KW = {
    "ppo": dict(n_envs=2, n_steps=32, batch_size=32, n_epochs=2),
    "dqn": dict(n_envs=2, learning_starts=64, train_freq=8, gradient_steps=2, net_arch=[32], buffer_size=2000,
                target_update_interval=1000),
    "impala": dict(n_envs=2, n_steps=32),  # the Learner/Explorer drivers (an explorer in this process)
    "appo": dict(n_envs=2, n_steps=32, batch_size=32),
}
# no target reward: the CartPole presets can reach 500 on one evaluation episode within 256 steps, and
# these runs must go on past POISON_AT (None would keep the preset's 475; a --set null clears it)
COMMON = dict(max_steps=1280, eval_every=256, eval_episodes=1, checkpoint_every=256, tensorboard=False,
              sets=["target_reward=null"])
POISON_AT = 512


class NaNAfter(gym.Wrapper):
    """CartPole whose observations turn NaN after ``after`` steps (a faulty simulator)."""

    def __init__(self, after: int = 300, **kw):
        super().__init__(gym.make("CartPole-v1", **kw))
        self.after, self.count = after, 0

    def step(self, action):
        obs, reward, term, trunc, info = self.env.step(action)
        self.count += 1
        if self.count > self.after:
            obs = np.full_like(obs, np.nan)
        return obs, reward, term, trunc, info


register("env", "NaNAfterCartPole-test")(NaNAfter)


class NoneRewardAfter(NaNAfter):
    """CartPole whose step() returns None as the reward after ``after`` steps (a step() that forgot its reward)."""

    def step(self, action):
        obs, reward, term, trunc, info = self.env.step(action)
        self.count += 1
        return obs, None if self.count > self.after else reward, term, trunc, info


register("env", "NoneRewardAfterCartPole-test")(NoneRewardAfter)


def poison_loss(algo: str, record: dict):
    """A before_collect hook that makes the next loss NaN from POISON_AT on, remembering the weights then."""

    def hook(trainer):
        if trainer.step >= POISON_AT and "weights" not in record:
            alg = trainer.algorithm
            record["weights"] = {k: {n: t.clone() for n, t in m.state_dict().items()} for k, m in alg.modules().items()}
            record["updates"] = alg.updates
            if algo == "ppo":
                alg.config.vf_coef = float("nan")  # the value loss term becomes NaN
            else:
                with torch.no_grad():  # a diverged target network: the TD target and loss become NaN
                    next(alg.q_target.parameters()).fill_(float("nan"))

    return hook


def assert_consistent_run_dir(run_dir, step: int, quantity: str) -> None:
    """summary says diverged; 'last' is a good, loadable, resumable checkpoint from before the fault."""
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "diverged"
    assert summary["divergence_events"][0]["step"] == step and quantity in summary["divergence_events"][0]["quantity"]
    state, meta = load_checkpoint(run_dir / "checkpoints" / "last")
    assert meta["resumable"] and meta["step"] <= step
    for module in state["agent"]["algorithm"]["modules"].values():
        assert all(torch.isfinite(t).all() for t in module.values())
    agent = canter.load(run_dir)
    assert np.isfinite(agent.predict(np.zeros((3, 4), np.float32))).all()
    history = pq.read_table(run_dir / "history.parquet")
    assert history.num_rows > 0
    assert not [p for p in run_dir.rglob("*") if p.name.endswith(".tmp")]
    # the summary counts what the files hold (the last logged record), not the discarded iteration
    assert summary["episodes"] == history.num_rows and max(history.column("step").to_pylist()) <= summary["steps"] < step
    evaluations = pq.read_table(run_dir / "evaluations.parquet").column("step").to_pylist()
    assert not evaluations or evaluations[-1] <= summary["steps"]


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_nan_loss_stops_before_the_update(tmp_path, algo):
    record: dict = {}
    run_dir = tmp_path / "run"
    run = canter.make_trainer(algo, "CartPole-v1", run_dir=run_dir, hooks={"before_collect": poison_loss(algo, record)},
                              **KW[algo], **COMMON)
    with pytest.raises(TrainingDiverged, match=r"diverged at step \d+: non-finite gradient") as info:
        list(run())
    run.close()
    # saving the diverged state by hand is refused: it would replace the last good 'last' (checked below)
    with pytest.raises(CanterError, match=r"cannot save a resumable checkpoint: .*diverged.*last good state"):
        run.save_resumable()
    alg = run.trainer.algorithm
    assert alg.updates == record["updates"]  # no optimizer step was taken after the poison
    for name, module in alg.modules().items():
        for key, t in module.state_dict().items():
            if name == "q_target":
                continue
            assert torch.equal(t, record["weights"][name][key]), f"{name}.{key} changed"
    assert POISON_AT < info.value.step <= POISON_AT + 64  # the step after the poisoned collection
    assert_consistent_run_dir(run_dir, info.value.step, "gradient")
    canter.resume(run_dir)  # without the poisoning hook the run finishes from its last good checkpoint
    assert json.loads((run_dir / "summary.json").read_text())["stop_reason"] == "max_steps"


@pytest.mark.parametrize("algo", ["ppo", "dqn", "impala", "appo"])
def test_nan_observation_from_a_faulty_env_stops_in_every_mode(tmp_path, algo):
    run_dir = tmp_path / "run"
    run = canter.make_trainer(algo, "NaNAfterCartPole-test", run_dir=run_dir, divergence_guard="restore",
                              env_kwargs={"after": 300}, **KW[algo], **COMMON)
    before: list[int] = []
    run.trainer.hooks.add(FunctionHook("after_update", lambda t, losses: before.append(t.algorithm.updates)))
    with pytest.raises(TrainingDiverged, match="observation from the env") as info:
        list(run())
    run.close()
    assert info.value.step >= 2 * 301  # no sub-env has taken 301 steps before (resets are not steps)
    assert run.trainer.algorithm.updates == before[-1]  # the NaN never reached an update
    assert_consistent_run_dir(run_dir, info.value.step, "observation from the env")


@pytest.mark.parametrize("algo", ["ppo", "dqn"])
def test_a_none_reward_from_the_env_is_named_as_steps_return_value_not_a_divergence(tmp_path, capsys, algo):
    args = ["train", algo, "--env", "NoneRewardAfterCartPole-test", "--env-kwargs", "{after: 40}", "--quiet",
            "--run-dir", str(tmp_path / "run"), "--max-steps", "1280", "--set", "target_reward=null"]
    for key, value in KW[algo].items():
        args += ["--set", f"{key}={value}"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "diverged" not in err, err
    assert re.search(r"the env's step\(\) returned a reward that is not a finite number \(None, NaN or inf\) at step "
                     r"\d+ \(sub-env \d\); gymnasium's API: step\(\) returns one number as the reward", err), err


def test_non_finite_parameter_after_an_update_is_caught(tmp_path):
    def explode(trainer):
        if trainer.step >= POISON_AT:
            trainer.algorithm.optimizers()["optimizer"].param_groups[0]["lr"] = float("inf")

    run_dir = tmp_path / "run"
    run = canter.make_trainer("dqn", "CartPole-v1", run_dir=run_dir, hooks={"before_collect": explode},
                              **{**KW["dqn"], "gradient_steps": 1}, **COMMON)
    with pytest.raises(TrainingDiverged, match="non-finite parameter q") as info:
        list(run())
    run.close()
    assert_consistent_run_dir(run_dir, info.value.step, "parameter")


def test_restore_mode_reloads_the_last_good_state_and_lowers_the_lr(tmp_path):
    state = {"poisoned": None}

    def poison_once(trainer):
        c = trainer.algorithm.config
        if state["poisoned"] is None and trainer.step >= POISON_AT:
            state["poisoned"], c.vf_coef = c.vf_coef, float("nan")
        elif state["poisoned"] is not None and not np.isnan(state["poisoned"]):
            c.vf_coef, state["poisoned"] = state["poisoned"], float("nan")  # one poisoned iteration only

    lrs: list[float] = []
    trainer = canter.make_trainer(
        "ppo", "CartPole-v1", divergence_guard="restore", lr=1e-3, lr_schedule="constant",
        hooks={"before_collect": poison_once, "after_update": lambda t, l: lrs.append(t.lr.current()["optimizer.0"])},
        **KW["ppo"], **COMMON,
    )
    records = list(trainer())
    trainer.close()
    assert records[-1].stop_reason == "max_steps"
    events = trainer.guard.events
    assert len(events) == 1 and "restored" in events[0]["action"] and "gradient" in events[0]["quantity"]
    assert lrs[0] == pytest.approx(1e-3) and lrs[-1] == pytest.approx(5e-4)
    assert all(torch.isfinite(p).all() for p in trainer.algorithm.modules()["model"].parameters())


def test_a_resumed_run_restores_the_same_last_good_state_as_the_uninterrupted_one(tmp_path):
    """The last good state (taken at the last finite evaluation) is part of the resume state: a run
    stopped between two evaluations and resumed restores it on a divergence, not the state it resumed from."""
    from canter.checkpoint import flatten_state

    def poison_at_384(trainer):  # one iteration with a NaN loss, after the stop and before the next evaluation
        trainer.algorithm.config.vf_coef = float("nan") if trainer.step == 384 else 0.5

    def stop_at_320(trainer, losses):  # what Run's handler does on a first Ctrl-C / SIGTERM
        if trainer.step == 320:
            trainer.stop_requested = "interrupted"

    common = dict(divergence_guard="restore", vf_coef=0.5, **KW["ppo"], **COMMON)
    hooks = {"before_collect": poison_at_384}
    whole = canter.train("ppo", "CartPole-v1", run_dir=tmp_path / "whole", hooks=hooks, **common)
    canter.train("ppo", "CartPole-v1", run_dir=tmp_path / "part", hooks={**hooks, "after_update": stop_at_320},
                 **common)
    resumed = canter.resume(tmp_path / "part", hooks=hooks)
    for run_dir in ("whole", "part"):
        events = json.loads((tmp_path / run_dir / "summary.json").read_text())["divergence_events"]
        assert [e["step"] for e in events] == [448] and "restored" in events[0]["action"]
    _, a = flatten_state(whole.state_dict())
    _, b = flatten_state(resumed.state_dict())
    assert a.keys() == b.keys() and not [k for k in a if not torch.equal(a[k], b[k])]


def test_restore_mode_gives_up_after_max_restores():
    record: dict = {}
    trainer = canter.make_trainer("ppo", "CartPole-v1", divergence_guard="restore", divergence_max_restores=2,
                                  hooks={"before_collect": poison_loss("ppo", record)}, **KW["ppo"], **COMMON)
    with pytest.raises(TrainingDiverged, match="restores exhausted"):
        list(trainer())
    trainer.close()
    assert trainer.guard.restores == 2 and len(trainer.guard.events) == 3


def test_guard_off_lets_nan_through():
    record: dict = {}
    trainer = canter.make_trainer("ppo", "CartPole-v1", divergence_guard="off",
                                  hooks={"before_collect": poison_loss("ppo", record)}, **KW["ppo"], **COMMON)
    list(trainer())
    trainer.close()
    assert not all(torch.isfinite(p).all() for p in trainer.algorithm.modules()["model"].parameters())


def test_cli_reports_divergence_in_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "poison_mod.py").write_text(
        "def poison(trainer):\n"
        "    if trainer.step >= 256:\n"
        "        trainer.algorithm.config.vf_coef = float('nan')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    run_dir = tmp_path / "run"
    code = main(["train", "ppo", "--env", "CartPole-v1", "--max-steps", "1024", "--n-envs", "2", "--set", "n_steps=32",
                 "--set", "hooks={before_collect: 'poison_mod:poison'}", "--set", "tensorboard=false",
                 "--run-dir", str(run_dir), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert "training diverged at step" in err and str(run_dir / "checkpoints" / "last") in err
    # a real process, where no test harness captures the logging module's warnings
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]), PYTHONWARNINGS="ignore")
    proc = subprocess.run([sys.executable, "-m", "canter", "train", "ppo", "--env", "CartPole-v1", "--max-steps", "1024",
                           "--n-envs", "2", "--set", "n_steps=32", "--set", "hooks={before_collect: 'poison_mod:poison'}",
                           "--set", "tensorboard=false", "--run-dir", str(tmp_path / "run2"), "--quiet"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr


def test_an_overflowing_numpy_pass_is_reported_in_one_line_and_the_summary_counts_nothing(tmp_path):
    """lr 1e12 overflows DQN's NumPy forward pass within the first updates: NumPy's own warnings
    stay out of stderr, and the summary describes the (empty) files, not the discarded iteration."""
    run_dir = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "canter", "train", "dqn", "--env", "CartPole-v1", "--lr", "1e12",
                           "--max-steps", "4000", "--set", "learning_starts=100", "--set", "tensorboard=false",
                           "--run-dir", str(run_dir), "--quiet"],
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "training diverged at step 256" in proc.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "diverged" and summary["divergence_events"][0]["step"] == 256
    assert (summary["steps"], summary["episodes"], summary["updates"]) == (0, 0, 0)
    assert summary["best_rolling_return"] is None
    assert pq.read_table(run_dir / "history.parquet").num_rows == 0
    assert json.loads((run_dir / "checkpoints" / "last.json").read_text())["step"] == 0


def test_clipping_that_saw_a_finite_norm_spares_the_guard_a_pass_and_nothing_else(monkeypatch):
    """The guard skips its gradient pass only while the flat optimizer's last clip saw these very
    gradients with a finite norm; a NaN written after clipping, a replaced gradient, or a clip
    that saw NaN all get the full check (and stop the step)."""
    from canter.optim import FlatAdam
    from canter.trainers.guard import Divergence, DivergenceGuard, _GradCheck

    net = torch.nn.Linear(3, 2)
    opt = FlatAdam(net.parameters(), lr=1e-3)

    class Owner:  # the two things the guard reads from a trainer
        step = 0
        algorithm = type("A", (), {"modules": lambda self: {"net": net}, "optimizers": lambda self: {"opt": opt}})()

    guard = DivergenceGuard(Owner())  # kept, as its trainer keeps it: a freed guard's hooks are removed
    guard.arm()
    checks = []

    def fill(value: float) -> None:
        opt.zero_grad()
        net(torch.ones(1, 3)).sum().backward()
        net.weight.grad[0, 0] = value

    fill(1.0)
    opt.clip_grad_norm_(10.0)
    assert opt.grads_known_finite()
    real = _GradCheck.__call__
    monkeypatch.setattr(_GradCheck, "__call__", lambda self, grads: checks.append(1) or real(self, grads))
    opt.step()  # known finite: no pass over the gradients
    assert checks == [] and not opt.grads_known_finite()  # a step clears it
    fill(1.0)
    opt.clip_grad_norm_(10.0)
    net.weight.grad[0, 1] = float("nan")  # written after clipping: the version moved
    with pytest.raises(Divergence):
        opt.step()
    assert checks == [1]
    fill(float("nan"))
    opt.clip_grad_norm_(10.0)  # the norm is NaN: nothing is known
    assert not opt.grads_known_finite()
    with pytest.raises(Divergence):
        opt.step()
    fill(1.0)
    opt.clip_grad_norm_(10.0)
    net.bias.grad = torch.full((2,), float("nan"))  # replaced, not written: also not known
    assert not opt.grads_known_finite()
    with pytest.raises(Divergence):
        opt.step()


def test_huge_but_finite_values_are_not_divergence():
    """The finiteness test took L2 norms, which overflow to inf past ~1.8e19 in float32: the guard then
    found no culprit and raised StopIteration instead of letting training go on."""
    from canter.trainers.guard import _all_finite, _GradCheck

    assert _all_finite([torch.tensor([3e19, 3e19]), torch.ones(3)])
    assert not _all_finite([torch.tensor([1.0, float("nan")])]) and not _all_finite([torch.tensor([float("inf")])])
    check = _GradCheck([torch.zeros(2, dtype=torch.float64)])  # not float32: the per-tensor path
    assert not check.fused and check([torch.tensor([1e160, 1.0], dtype=torch.float64)])
    assert not check([torch.tensor([float("nan")], dtype=torch.float64)])


def test_warm_up_iterations_skip_the_parameter_pass(monkeypatch):
    """Before ``learning_starts`` an off-policy iteration changes no parameter, yet the guard took a
    pass over every trained parameter after each one: for TD3's 256-unit networks (two threads) that
    was 14-34 s for 2,000 warm-up steps against 0.7 s with the guard off. Once updates run, every
    iteration is checked again."""
    import canter.trainers.guard as guard

    calls = []
    real = guard._all_finite
    monkeypatch.setattr(guard, "_all_finite", lambda tensors: calls.append(len(tensors)) or real(tensors))
    trainer = canter.make_trainer("dqn", "CartPole-v1", **{**KW["dqn"], "learning_starts": 160}, max_steps=320,
                                  eval_every=0, eval_episodes=1, sets=["target_reward=null"])
    warm_up = 0
    for record in trainer():
        if record.losses:  # the first iteration that learned
            break
        warm_up += 1
    assert warm_up == 20 and len(calls) == 2  # the first warm-up iteration and the first update only
    calls.clear()
    updating = list(trainer())  # the phases ending at steps 176, ..., 320 (the first update: after 168)
    assert len(updating) == 19 and all(r.losses for r in updating) and len(calls) == 19  # each one checked


@pytest.mark.parametrize("algo", ["dqn", "td3", "ppo"])
def test_parameters_are_checked_through_the_flat_optimizer_buffers(algo):
    """The parameter pass ran torch's per-tensor norms (~1 ms for TD3's 367k parameters, once per env step
    with train_freq 1); canter's flat optimizers' buffers are checked as one NumPy array each (~34 µs).
    Every trained parameter is still covered, and a NaN in one is named."""
    from canter.trainers.guard import Divergence

    env = "Pendulum-v1" if algo == "td3" else "CartPole-v1"
    trainer = canter.make_trainer(algo, env, seed=0, max_steps=20_000, eval_every=0)
    guard = trainer.guard
    guard.check_update({"loss": 1.0})
    arrays, rest = guard._check
    assert arrays and rest == [] and sum(a.size for a in arrays) == sum(p.numel() for _, p in guard._params)
    name, param = guard._params[-1]
    with torch.no_grad():
        param.view(-1)[0] = float("nan")
    with pytest.raises(Divergence, match=re.escape(f"parameter {name}")):
        guard.check_update({"loss": 1.0})
    trainer.close()


@pytest.mark.parametrize("algo, hint", [("ppo", "a lower learning rate"), ("npg", "a lower target_kl"),
                                        ("trpo", "a lower target_kl")])
def test_a_divergence_stop_names_what_sets_the_policy_step(algo, hint):
    """TRPO/NPG's stop said 'try a lower learning rate', but their policy step is target_kl (lr is the
    critic's): a non-finite 'kl' from target_kl=1000 was met with advice that cannot help."""
    from types import SimpleNamespace

    from canter.registry import lookup
    from canter.trainers.guard import Divergence, DivergenceGuard

    guard = DivergenceGuard(SimpleNamespace(algorithm=lookup("algorithm", algo)))
    with pytest.raises(TrainingDiverged, match=f"non-finite kl; try {hint}"):
        guard.handle(Divergence("kl", 64))


def test_the_env_data_check_of_a_small_step_finds_nan_and_inf_only():
    """One env's observation is summed in Python floats (guard._finite_sum): NaN and inf are still found, and
    finite float64 values whose sum overflows are not taken for them."""
    from types import SimpleNamespace

    from canter.trainers.guard import Divergence, DivergenceGuard

    guard = DivergenceGuard(SimpleNamespace(step=7))
    reward = np.ones(1, dtype=np.float32)
    guard.check_env_data(np.full((1, 4), 1e308), reward)  # the sum overflows; every value is finite
    for bad in (np.nan, np.inf, -np.inf):
        obs = np.zeros((1, 4), dtype=np.float32)
        obs[0, 2] = bad
        with pytest.raises(Divergence, match="observation"):
            guard.check_env_data(obs, reward)
        with pytest.raises(Divergence, match="reward"):
            guard.check_env_data(np.zeros((1, 4), dtype=np.float32), np.array([bad], dtype=np.float32))


def test_restore_mode_with_no_restores_allowed_does_not_say_they_were_exhausted():
    """divergence_max_restores: 0 stopped with '(restores exhausted)', though none was made."""
    record: dict = {}
    trainer = canter.make_trainer("ppo", "CartPole-v1", divergence_guard="restore", divergence_max_restores=0,
                                  hooks={"before_collect": poison_loss("ppo", record)}, **KW["ppo"], **COMMON)
    with pytest.raises(TrainingDiverged, match=r"\(divergence_max_restores: 0, no restore allowed\)") as info:
        list(trainer())
    trainer.close()
    assert "exhausted" not in str(info.value) and trainer.guard.restores == 0
