"""Off-policy bad input: one-line errors for action spaces, buffer and minibatch sizes, entropy coefficients
and missing extras, and a warning for learning_starts beyond the budget."""
import sys
import warnings

import pytest

import canter
from canter.cli import main
from canter.errors import CanterError, CanterWarning
from support import TINY


# ---------------------------------------------------------------------------------------------- bad input


def _cli_error(capsys, *argv: str) -> str:
    capsys.readouterr()
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("canter: error:") and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("algo, env, kind, hint", [
    ("sac", "CartPole-v1", "Box", "for Discrete actions use sac_discrete (or c51, dqn, iqn, qrdqn, rainbow; on a PettingZoo parallel env also qmix)"),
    ("td3", "Acrobot-v1", "Box", "algorithms for Discrete actions: c51, dqn, iqn, qrdqn, rainbow, sac_discrete "
                                  "(on a PettingZoo parallel env also qmix)"),
    ("ddpg", "CartPole-v1", "Box", "algorithms for Discrete actions: c51, dqn, iqn, qrdqn, rainbow, sac_discrete "
                                   "(on a PettingZoo parallel env also qmix)"),
    ("dqn", "Pendulum-v1", "Discrete", "algorithms for Box actions: ddpg, sac, td3, tqc"),
    ("sac_discrete", "Pendulum-v1", "Discrete", "for Box actions use sac (or ddpg, td3, tqc)"),
    ("acer", "Pendulum-v1", "Discrete",
     "algorithms for Box actions: a2c, appo, ddpg, impala, npg, ppo, recurrent_ppo, reinforce, sac, td3, tqc, trpo "
     "(on a PettingZoo parallel env also mappo)")])
def test_wrong_action_space_is_a_one_line_error(capsys, tmp_path, algo, env, kind, hint):
    """The line names the algorithms that do act in the env's space (sac on CartPole named none: a user had to
    know of sac_discrete; found by a sweep of algorithms over gymnasium's envs)."""
    line = _cli_error(capsys, "train", algo, "--env", env, "--run-dir", str(tmp_path / "r"), "--quiet")
    assert f"needs a {kind} action space" in line and line.endswith(hint)
    assert not (tmp_path / "r").exists()


def test_buffer_smaller_than_batch_is_a_one_line_error(capsys, tmp_path):
    line = _cli_error(capsys, "train", "sac", "--env", "Pendulum-v1", "--set", "buffer_size=100",
                      "--set", "batch_size=256", "--run-dir", str(tmp_path / "r"))
    assert "buffer_size" in line and "batch_size" in line
    assert not (tmp_path / "r").exists()


def test_a_minibatch_too_large_for_memory_is_a_one_line_error(monkeypatch):
    """A batch_size whose gradient step torch cannot allocate (batch_size=10**8: 95 GiB) ended the run
    with torch's RuntimeError and a traceback of C++ frames; other errors still propagate as they are."""
    trainer = canter.make_trainer("sac", "Pendulum-v1", max_steps=64, **TINY)
    oom = RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: "
                       "you tried to allocate 102400000000 bytes. Error code 12 (Cannot allocate memory)")

    def learn(batch):
        raise oom

    monkeypatch.setattr(trainer.agent, "learn", learn)
    with pytest.raises(CanterError, match=r"batch_size 16 .*95\.4 GiB.*lower hparams\.batch_size"):
        list(trainer())
    oom = RuntimeError("mat1 and mat2 shapes cannot be multiplied")
    with pytest.raises(RuntimeError, match="shapes"):
        trainer.train(1)
    trainer.close()


def test_bad_entropy_coefficient_is_a_one_line_error(capsys, tmp_path):
    line = _cli_error(capsys, "train", "sac", "--env", "Pendulum-v1", "--set", "ent_coef=autox",
                      "--run-dir", str(tmp_path / "r"))
    assert "ent_coef" in line


@pytest.mark.parametrize("env, module, extra", [("LunarLander-v3", "Box2D", "box2d"),
                                                ("HalfCheetah-v5", "mujoco", "mujoco")])
def test_missing_extra_is_a_one_line_error(capsys, monkeypatch, tmp_path, env, module, extra):
    for name in list(sys.modules):
        if name == module or name.startswith(module + ".") or name.startswith("gymnasium.envs.box2d") \
                or name.startswith("gymnasium.envs.mujoco"):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if the package were missing
    line = _cli_error(capsys, "train", "sac", "--env", env, "--run-dir", str(tmp_path / "r"))
    assert f"canter[{extra}]" in line
    assert not (tmp_path / "r").exists()


def test_learning_starts_beyond_the_budget_is_a_warning_not_an_error(capsys, tmp_path):
    with pytest.warns(CanterWarning, match="learning_starts"):
        trainer = canter.make_trainer("td3", "Pendulum-v1", max_steps=50, learning_starts=100, eval_every=0,
                                      eval_episodes=1)
    assert list(trainer())[-1].step == 50
    trainer.close()
    capsys.readouterr()
    code = main(["train", "sac", "--env", "Pendulum-v1", "--max-steps", "20", "--set", "learning_starts=100",
                 "--eval-episodes", "1", "--quiet", "--run-dir", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 0
    assert [line for line in err.splitlines() if line.strip()] == [
        "canter: warning: learning_starts (100) >= max_steps (20): the run only collects random actions and never "
        "learns"
    ]


def test_a_training_phase_longer_than_the_budget_is_warned_about():
    """train_freq 64 with max_steps 20 took 64 env steps without a word (on-policy runs warned of a rollout
    longer than the budget); and a learning_starts inside that one phase was said never to learn, though the
    phase's end (step 64 > 30) trains."""
    with pytest.warns(CanterWarning) as caught:
        trainer = canter.make_trainer("dqn", "CartPole-v1", max_steps=20, train_freq=64, learning_starts=30,
                                      eval_every=0, eval_episodes=1)
    assert [str(w.message) for w in caught] == [
        "max_steps (20) is less than one training phase (train_freq 64 on 1 env = 64 steps; --set train_freq=20 makes "
        "one fit): the run takes 64 steps"]
    records = list(trainer())
    trainer.close()
    assert records[-1].step == 64 and records[-1].losses  # one whole phase, which trained


def test_the_training_phase_warning_names_a_train_freq_that_fits():
    """The warning for a training phase longer than max_steps named no setting to change (the on-policy rollout's
    names the n_steps that fits); it now names the largest train_freq whose phase (whole vector steps) fits, or
    fewer envs where not even one vector step does."""
    def budget_warnings(n_envs: int, max_steps: int, train_freq: int) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            trainer = canter.make_trainer("dqn", "CartPole-v1", n_envs=n_envs, max_steps=max_steps,
                                          train_freq=train_freq, learning_starts=0, eval_every=0, eval_episodes=1)
        trainer.close()
        return [str(w.message) for w in caught if "training phase" in str(w.message)]

    said = budget_warnings(3, 100, 200)
    assert len(said) == 1 and "(train_freq 200 on 3 envs = 201 steps; --set train_freq=99 makes one fit)" in said[0]
    assert budget_warnings(3, 100, 99) == []  # what it suggested fits: 33 vector steps of 3 envs
    said = budget_warnings(4, 3, 8)
    assert len(said) == 1 and "; fewer envs (--n-envs) and train_freq 1 make one fit)" in said[0], said
