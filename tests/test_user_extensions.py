"""A user's components registered by name in a module (tests/user_ext_parts.py), as the docs show: what a
run records of them, and the errors when they cannot be found again."""
import pytest

import canter
from canter.errors import CanterError

NAMES = (("model", "user_ext_ac"), ("algorithm", "user_ext_ppo_l2"), ("algorithm", "user_ext_aux_ppo"),
         ("algorithm", "user_ext_ppo_counted"))


@pytest.fixture(autouse=True)
def _forget_user_parts():
    """The user's names registered for one test only: later tests list the registry (canter list, error hints)."""
    import sys

    from canter.registry import _REGISTERED_BY, _REGISTRY

    yield
    for kind, name in NAMES:
        _REGISTRY[kind].pop(name, None)
        _REGISTERED_BY.pop((kind, name), None)
    sys.modules.pop("user_ext_parts", None)
    sys.modules.pop("user_ext_aux", None)


def test_loading_a_run_whose_module_no_longer_registers_its_model_says_so(tmp_path):
    """The recorded module imported, but registers the model under another name now (renamed): loading said only
    that a component registered in __main__ is not recorded and to train with it in a module ('imports:
    [my_pkg.parts]'), which the run had done."""
    import user_ext_parts  # noqa: F401 - registers user_ext_ac
    from canter.registry import _REGISTRY

    trainer = canter.make_trainer("ppo", "CartPole-v1", model="user_ext_ac", imports=["user_ext_parts"],
                                  eval_episodes=0)
    trainer.save_agent(tmp_path / "agent")
    trainer.close()
    model = _REGISTRY["model"].pop("user_ext_ac")  # the module, already imported, registers it no more
    try:
        with pytest.raises(CanterError, match=r"trained with model 'user_ext_ac', which nothing registers in this "
                                              r"process.*: the module it recorded \('user_ext_parts'\) imported and "
                                              r"registers no model of that name \(renamed or removed there\?\)"):
            canter.load(tmp_path / "agent")
    finally:
        _REGISTRY["model"]["user_ext_ac"] = model
    assert type(canter.load(tmp_path / "agent").algorithm.model).__name__ == "UserExtAC"


@pytest.mark.parametrize("flag", [["--import", "user_ext_parts"], ["--import=user_ext_parts"]])
def test_train_given_list_import_flag_says_how_a_run_imports(capsys, flag):
    """'canter train user_ext_ppo_l2 --import user_ext_parts' (canter list's flag) was "unknown algorithm
    'user_ext_ppo_l2'; did you mean 'ppo'": the algorithm was looked up before the unknown flag was found."""
    from support import assert_one_line_error, run_cli

    code, _, err = run_cli(capsys, "train", "user_ext_ppo_l2", "--env", "CartPole-v1", *flag)
    assert_one_line_error(code, err, "canter train has no --import", "--set imports=[MODULE]")


def test_a_callback_state_no_checkpoint_holds_is_one_line(capsys, tmp_path):
    """A user's callback whose state_dict() returned a set ended 'canter train' with a traceback ("TypeError: cannot
    checkpoint value of type set at ...") and exit code 1."""
    from support import TINY_ARGV, assert_one_line_error, run_cli

    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *TINY_ARGV, "--run-dir",
                           str(tmp_path / "run"), "--set", "callbacks=[user_ext_callbacks:SetState]")
    assert_one_line_error(code, err, "cannot checkpoint value of type set at 'trainer.hooks.SetState#0.seen'",
                          "callback's state_dict()")


def test_a_config_callback_without_hooks_is_named_by_its_class(capsys, tmp_path):
    """callbacks: [{user_ext_callbacks:NoHook: {tag: hi}}] whose only method is no hook was "<user_ext_callbacks.NoHook
    object at 0x7f...> has none of the hook methods ...", naming an object's address, not the config's entry."""
    from support import TINY_ARGV, assert_one_line_error, run_cli

    code, _, err = run_cli(capsys, "train", "ppo", "--env", "CartPole-v1", *TINY_ARGV, "--run-dir",
                           str(tmp_path / "run"), "--set", "callbacks=[{user_ext_callbacks:NoHook: {tag: hi}}]")
    line = assert_one_line_error(code, err, "callback user_ext_callbacks:NoHook has none of the hook methods",
                                 "(it defines on_update: none is called)")
    assert "object at 0x" not in line


def test_a_user_algorithm_holding_a_network_its_modules_do_not_return_is_warned(tmp_path):
    """A PPO variant with an auxiliary network and optimizer of its own (tests/user_ext_aux.py) that its modules() and
    optimizers() leave out trained, and canter.load gave back that network as initialised, without a word."""
    from canter.errors import CanterWarning

    with pytest.warns(CanterWarning, match=r"algorithm user_ext_aux:AuxPPO holds self\.aux, self\.aux_opt, which its "
                                           r"modules\(\) and optimizers\(\) do not return: checkpoints"):
        trainer = canter.make_trainer("user_ext_aux_ppo", "CartPole-v1", imports=["user_ext_aux"], n_envs=2,
                                      n_steps=16, batch_size=32, eval_episodes=0)
    trainer.close()


@pytest.mark.parametrize("algo, env", [("ppo", "CartPole-v1"), ("dqn", "CartPole-v1"), ("sac", "Pendulum-v1")])
def test_canters_own_algorithms_save_every_network_they_hold(algo, env):
    """The check above finds nothing in canter's own algorithms (a user's subclass of one is not warned for its
    parent's attributes)."""
    import warnings

    from canter.agent_factory import unsaved_parts

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a tiny run's advice (one minibatch per rollout)
        trainer = canter.make_trainer(algo, env, n_envs=1, eval_episodes=0)
    assert unsaved_parts(trainer.agent.algorithm) == []
    trainer.close()


def test_loading_a_checkpoint_of_a_hyperparameter_its_algorithm_renamed_says_it_is_the_checkpoints(tmp_path,
                                                                                                   monkeypatch):
    """A user's algorithm whose hyperparameter was renamed after a run (l2_coef -> l2_weight): loading or resuming
    the run said "unknown config key 'hparams.l2_coef'", a key the user never gave in that command."""
    import dataclasses

    import user_ext_parts

    trainer = canter.make_trainer("user_ext_ppo_l2", "CartPole-v1", imports=["user_ext_parts"], eval_episodes=0)
    trainer.save_agent(tmp_path / "agent")
    trainer.close()
    fields = [(f.name if f.name != "l2_coef" else "l2_weight", f.type, f) for f in
              dataclasses.fields(user_ext_parts.L2PPOConfig)]
    renamed = dataclasses.make_dataclass("L2PPOConfig", [(n, t, dataclasses.field(default=f.default, metadata=f.metadata))
                                                         if f.default is not dataclasses.MISSING else
                                                         (n, t, dataclasses.field(default_factory=f.default_factory,
                                                                                  metadata=f.metadata))
                                                         for n, t, f in fields])
    renamed.__module__ = "user_ext_parts"
    monkeypatch.setattr(user_ext_parts.L2PPO, "Config", renamed)
    with pytest.raises(CanterError, match=r"checkpoint .*agent was trained with hyperparameter 'hparams.l2_coef', which "
                                          r"the algorithm's config user_ext_parts:L2PPOConfig no longer has \(renamed "
                                          r".*'l2_weight'\?\)"):
        canter.load(tmp_path / "agent")


@pytest.mark.parametrize("algo", ["user_ext_ppo_l2", "user_ext_ppo_counted"])
def test_a_ppo_subclass_overriding_its_loss_is_trained_with_it(algo):
    """A user's PPO subclass overriding _grads_autograd (its loss, to add a term) with manual_backward left on, as
    PPO's default is, was trained by the hand-derived gradients of PPO's own loss: the override was never called."""
    import user_ext_parts

    trainer = canter.make_trainer(algo, "CartPole-v1", imports=["user_ext_parts"], n_envs=2, n_steps=16,
                                  batch_size=32, n_epochs=1, max_steps=64, eval_episodes=0)
    assert not trainer.agent.algorithm.uses_manual_backward
    user_ext_parts.CountedPPO.calls = 0
    list(trainer())
    trainer.close()
    assert algo != "user_ext_ppo_counted" or user_ext_parts.CountedPPO.calls == 2  # 2 rollouts, 1 minibatch each


def test_a_callback_without_hooks_does_not_list_its_state_methods_as_never_called():
    """A hookless callback that keeps state: its state_dict and load_state_dict, which a run does call (Callback's
    own methods), were listed among the methods of which 'none is called'."""
    from canter.callbacks import Hooks
    from user_ext_callbacks import NoHook

    class Stateful(NoHook):
        def on_update(self, trainer, losses):
            self.n += 1

        def state_dict(self):
            return {"n": self.n}

        def load_state_dict(self, state):
            self.n = state["n"]

    with pytest.raises(CanterError, match=r"Stateful has none of the hook methods .*\(it defines on_update: none is "
                                          r"called\)$"):
        Hooks([Stateful()])
