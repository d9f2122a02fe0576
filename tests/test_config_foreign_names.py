"""Settings named as Stable-Baselines3 and Tianshou name them (keys, values, callbacks): each is answered
with canter's own setting, not a bare type error or a misleading 'did you mean'."""
import pytest

from canter.config import resolve_config
from canter.errors import CanterError


def test_stable_baselines3_names_point_to_canters(capsys):
    """learning_rate was answered "did you mean 'clip_range'" (PPO) or "'learning_starts'" (DQN, a step count),
    and n_timesteps "did you mean 'n_steps'" (PPO's rollout length): the closest spellings, not the settings."""
    from canter.cli import main

    with pytest.raises(CanterError, match=r"unknown config key 'learning_rate'; canter calls it 'hparams.lr'"):
        resolve_config("dqn", "CartPole-v1", sets=["learning_rate=0.001"])
    with pytest.raises(CanterError, match=r"'hparams.learning_rate'; canter calls it 'hparams.lr'"):
        resolve_config("ppo", "CartPole-v1", sets=["hparams={learning_rate: 0.001}"])
    with pytest.raises(CanterError, match=r"'n_timesteps'; canter calls it 'max_steps'"):
        resolve_config("ppo", "CartPole-v1", sets=["n_timesteps=1e5"])
    assert main(["train", "ppo", "--env", "CartPole-v1", "--learning-rate", "0.001"]) == 2
    assert capsys.readouterr().err.strip().endswith("did you mean '--lr'?")


def test_tianshou_names_point_to_canters(capsys):
    """A Tianshou user's trainer and policy arguments were answered with the closest spellings: step_per_epoch
    "did you mean 'per_eps'?", update_per_step "'per_eps' or 'plateau_patience'", test_num and stop_fn "82 choices"."""
    from canter.cli import main

    with pytest.raises(CanterError, match=r"'episode_per_test'; canter calls it 'eval_episodes' \(Tianshou's"):
        resolve_config("dqn", "CartPole-v1", sets=["episode_per_test=5"])
    with pytest.raises(CanterError, match=r"'estimation_step'; canter calls it 'hparams.n_step'"):
        resolve_config("dqn", "CartPole-v1", sets=["estimation_step=3"])
    with pytest.raises(CanterError, match=r"'repeat_per_collect'; canter calls it 'hparams.n_epochs'"):
        resolve_config("ppo", "CartPole-v1", sets=["repeat_per_collect=4"])
    with pytest.raises(CanterError, match=r"'step_per_epoch' \(Tianshou's\): canter evaluates every eval_every"):
        resolve_config("dqn", "CartPole-v1", sets=["step_per_epoch=1000"])
    with pytest.raises(CanterError, match=r"'update_per_step' \(Tianshou's\): .*gradient_steps .*train_freq"):
        resolve_config("dqn", "CartPole-v1", sets=["update_per_step=0.1"])
    with pytest.raises(CanterError, match=r"'save_best_fn' \(Tianshou's\): .*checkpoints/best.*on_best"):
        resolve_config("dqn", "CartPole-v1", sets=["save_best_fn=x"])
    # PPO has no n_step: estimation_step was answered "did you mean 'max_steps' or 'vectorization'", where
    # docs/training-control.md says Tianshou's names are answered with canter's (found auditing the docs)
    with pytest.raises(CanterError, match=r"'estimation_step'; canter calls it 'hparams.n_step' \(Tianshou's "
                                          r"'estimation_step'\), but ppo has no hyperparameter 'n_step', c51, "):
        resolve_config("ppo", "CartPole-v1", sets=["estimation_step=3"])
    with pytest.raises(CanterError, match=r"'hparams.target_update_freq'; canter calls it "
                                          r"'hparams.target_update_interval' .*, but ppo has no hyperparameter"):
        resolve_config("ppo", "CartPole-v1", sets=["hparams.target_update_freq=100"])
    with pytest.raises(CanterError, match=r"'n_sampled_goal'; canter calls it 'hparams.her_goals' "
                                          r"\(Stable-Baselines3's 'n_sampled_goal'\), but ppo has no"):
        resolve_config("ppo", "CartPole-v1", sets=["n_sampled_goal=4"])
    assert main(["train", "dqn", "--env", "CartPole-v1", "--test-num", "3"]) == 2
    assert capsys.readouterr().err.strip().endswith("did you mean '--set eval_envs=VALUE'?")
    assert main(["train", "dqn", "--env", "CartPole-v1", "--estimation-step", "3"]) == 2
    assert capsys.readouterr().err.strip().endswith("did you mean '--n-step'?")
    assert main(["train", "ppo", "--env", "CartPole-v1", "--estimation-step", "3"]) == 2  # was '--max-steps' alone
    assert ("--estimation-step 3: canter calls it --n-step, but ppo has no hyperparameter 'n_step', c51, "
            in capsys.readouterr().err)


def test_stable_baselines3_arguments_that_are_no_single_key_say_what_they_are_here():
    """policy_kwargs was answered "did you mean 'policy_hparams'" (a multi-agent run's per-policy settings), verbose
    '75 choices' and tensorboard_log "did you mean 'tensorboard'" (a switch, not a folder)."""
    for kwargs, needle in (({"policy_kwargs": {"net_arch": [64]}}, r"its entries are .*such as net_arch .* and activation \(for "
                                                                    r"activation_fn"),
                           ({"verbose": 1}, r"canter shows progress unless --quiet"),
                           ({"tensorboard_log": "tb"}, r"TensorBoard event files go to the run directory \(run_dir\)")):
        with pytest.raises(CanterError, match=rf"unknown config key '{next(iter(kwargs))}' \(Stable-Baselines3's\): "
                                              rf"{needle}"):
            resolve_config("dqn", "CartPole-v1", **kwargs)


def test_values_written_as_stable_baselines3_takes_them_say_what_they_are_here():
    """A schedule function for lr, an activation class and net_arch=dict(pi=..., vf=...) were answered with a bare
    type error ("'hparams.lr' must be a float, got <function <lambda> ...>"; for [dict(pi=..., vf=...)] "must be an
    int"), and activation_fn with "did you mean 'activation' or 'vectorization'?"."""
    import torch

    for kwargs, needle in (({"lr": lambda progress: 3e-4 * progress}, r"must be a float, got <function .*\(a "
                            r"Stable-Baselines3 schedule function\? canter's schedules are named settings: lr_decay"),
                           ({"activation": torch.nn.ReLU}, r"must be a str, got .*ReLU'> \(Stable-Baselines3's "
                            r"activation_fn class; canter names it: 'relu'\)$"),
                           ({"activation": torch.nn.LeakyReLU}, r"must be a str, got .*canter names it: tanh, relu, elu, gelu or silu\)$")):
        with pytest.raises(CanterError, match=rf"^'hparams\.{next(iter(kwargs))}' {needle}"):
            resolve_config("ppo", "CartPole-v1", **kwargs)
    # actor-critic algorithms take SB3's dict(pi=..., vf=...) (tests/test_critic_net_arch.py); DQN has one network
    for net_arch, needle in (({"pi": [32], "vf": [64]}, r"must be a list\[int\], got .*\(Stable-Baselines3's "
                              r"dict\(pi=\.\.\., vf=\.\.\.\): the actor-critic algorithms read it as net_arch and critic_net_arch; "
                              r"here net_arch is one list"),
                             ([{"pi": [32], "vf": [64]}], r"must be an int, got .*dict\(pi=\.\.\., vf")):
        with pytest.raises(CanterError, match=rf"^'hparams\.net_arch' {needle}"):
            resolve_config("dqn", "CartPole-v1", net_arch=net_arch)

    class NormalActionNoise:  # SB3's noise objects are callable: the schedule hint was given for them at first
        def __call__(self):
            return 0.0

    with pytest.raises(CanterError, match=r"must be a str, got .*\(Stable-Baselines3's NormalActionNoise or "
                                          r"OrnsteinUhlenbeckActionNoise object: canter names the kind, normal or ou, "
                                          r"and takes its sigma as noise_std"):
        resolve_config("td3", "Pendulum-v1", action_noise=NormalActionNoise())
    with pytest.raises(CanterError, match=r"^unknown config key 'activation_fn'; canter calls it 'hparams.activation' "
                                          r"\(Stable-Baselines3's 'activation_fn'\)$"):
        resolve_config("ppo", "CartPole-v1", activation_fn="relu")
    assert resolve_config("ppo", "CartPole-v1", activation="relu", net_arch=[32])[1].net_arch == [32]


def test_more_stable_baselines3_arguments_are_pointed_at_canters():
    """policy='MlpPolicy' was answered "did you mean 'policies'?" (multi-agent), callback "'callbacks' or
    'manual_backward'", vec_env_cls "'eval_envs' or 'n_envs'", replay_buffer_class "'buffer_size'", monitor_wrapper
    "'monitor'" (early stopping's), optimizer_class "'normalize_obs'", features_extractor_class '76 choices',
    gradient_steps=-1 (an off-policy setting, which offline algorithms refuse) and target_entropy='auto' with a bare
    range or type error."""
    for algo, kwargs, needle in (
            ("ppo", {"policy": "MlpPolicy"}, r"'policy' \(Stable-Baselines3's\): the networks follow the observations"),
            ("ppo", {"callback": "my:Cb"}, r"'callback'; canter calls it 'callbacks' \(Stable-Baselines3's 'callback'\)"),
            ("ppo", {"vec_env_cls": "SubprocVecEnv"}, r"vectorization: async for SubprocVecEnv"),
            ("ppo", {"monitor_wrapper": True}, r"canter records every training episode's return"),
            ("ppo", {"features_extractor_class": "my:Cnn"}, r"the observation encoder is the encoder hyperparameter"),
            ("sac", {"optimizer_kwargs": {"eps": 1e-5}}, r"the optimizer's settings are hyperparameters"),
            ("a2c", {"optimizer_class": "Adam"}, r"A2C and ACER: the optimizer hyperparameter, rmsprop or adam"),
            ("dqn", {"replay_buffer_class": "HerReplayBuffer"}, r"HerReplayBuffer is her_goals: N"),
            ("dqn", {"replay_buffer_kwargs": {}}, r"n_sampled_goal is her_goals, goal_selection_strategy her_strategy"),
            ("dqn", {"goal_selection_strategy": "future"}, r"canter calls it 'hparams.her_strategy'"),
            ("bc", {"gradient_steps": -1}, r"must be >= 1, got -1 \(Stable-Baselines3's -1, .* is an off-policy "
                                           r"setting; here gradient_steps counts the updates of one iteration\)$"),
            ("sac", {"target_entropy": "auto"}, r"must be a float or null, got 'auto' \(Stable-Baselines3's 'auto' is "
                                                r"null here: -action_dim\)$")):
        with pytest.raises(CanterError, match=needle):
            resolve_config(algo, "Pendulum-v1" if algo == "sac" else "CartPole-v1", **kwargs)


def test_an_rl_zoo3_hyperparameter_file_says_how_canter_holds_it(tmp_path):
    """rl-zoo3's files nest the settings under the env id ('unknown config key CartPole-v1; 80 choices') and write
    linear schedules as lin_0.001 ("must be a float, got 'lin_0.001'"): both are answered with canter's form."""
    f = tmp_path / "ppo.yml"
    f.write_text("CartPole-v1:\n  n_envs: 8\n  n_steps: 32\n")
    with pytest.raises(CanterError, match=r"sets 'CartPole-v1' to a mapping of settings, as rl-zoo3's hyperparameter "
                                          r"files do .* at the top level: env: CartPole-v1"):
        resolve_config("ppo", "CartPole-v1", f)
    with pytest.raises(CanterError, match=r"got 'lin_0.001' \(rl-zoo3's linear schedule from 0.001: here lr: 0.001 "
                                          r"with lr_decay: linear"):
        resolve_config("ppo", "CartPole-v1", sets=["lr=lin_0.001"])
    with pytest.raises(CanterError, match=r"clip_range: 0.2 with clip_schedule: linear"):
        resolve_config("ppo", "CartPole-v1", sets=["clip_range=lin_0.2"])


def test_an_rl_zoo3_file_without_env_is_answered_as_one(tmp_path):
    """Without --env, an rl-zoo3 file (its env a section, no 'env:' key) was 'no environment given; pass --env'; with
    the --env added the user then met the rl-zoo3 line. The rl-zoo3 line now comes first."""
    f = tmp_path / "ppo.yml"
    f.write_text("CartPole-v1:\n  n_envs: 8\n  policy: MlpPolicy\n")
    with pytest.raises(CanterError, match=r"sets 'CartPole-v1' to a mapping of settings, as rl-zoo3's"):
        resolve_config("ppo", None, f)
    f.write_text("seed: 3\n")  # a file without an env and no such section: as before
    with pytest.raises(CanterError, match=r"^no environment given; pass --env ENV_ID"):
        resolve_config("ppo", None, f)


def test_env_wrappers_given_as_config_keys_point_to_a_registered_factory(tmp_path):
    """rl-zoo3's env_wrapper (and a 'wrappers' list) was answered "did you mean 'env_kwargs'", which only passes
    arguments to the env's constructor, frame_stack "did you mean 'central_state'" and 'wrappers' '82 choices'."""
    for key, value in (("env_wrapper", ["gymnasium.wrappers.TimeLimit"]), ("wrappers", ["x"]),
                       ("vec_env_wrapper", "VecNormalize"), ("frame_stack", 4)):
        config = tmp_path / f"{key}.yaml"
        config.write_text(f"{key}: {value!r}\n")
        with pytest.raises(CanterError, match=rf"unknown config key '{key}'.*: .*@canter.register\('env', 'MyEnv-v0'\) "
                                              r"on a function that returns the wrapped gymnasium.make"):
            resolve_config("ppo", "CartPole-v1", config_file=str(config))
    with pytest.raises(CanterError, match=r"'frame_stack' \(rl-zoo3's\): an Atari env's frame stack is its env_kwargs' "
                                          r"frame_stack \(env_kwargs: \{frame_stack: 4\}\)"):
        resolve_config("dqn", "CartPole-v1", sets=["frame_stack=4"])
    with pytest.raises(CanterError, match=r"VecNormalize is the normalize_obs and normalize_reward"):
        resolve_config("ppo", "CartPole-v1", sets=["hparams.vec_env_wrapper=x"])


def test_an_rl_zoo3_file_without_algo_is_answered_as_one(tmp_path, capsys):
    """canter train -f ppo.yml (an rl-zoo3 file: no 'algo' key, its env a section) said "no algorithm given, and
    ppo.yml has no 'algo' key"; with the algorithm named the user then met the rl-zoo3 line. The rl-zoo3 line now
    comes first, naming the algorithm too; a file with neither an algo nor such a section is answered as before."""
    from canter.cli import main

    f = tmp_path / "ppo.yml"
    f.write_text("CartPole-v1:\n  n_envs: 8\n  policy: MlpPolicy\n")
    assert main(["train", "-f", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"canter: error: {f} sets 'CartPole-v1' to a mapping of settings, as rl-zoo3's"), err
    assert err.rstrip().endswith(f"; and name the algorithm: canter train ALGO -f {f}") and len(err.splitlines()) == 1
    f.write_text("seed: 3\n")
    assert main(["train", "-f", str(f)]) == 2
    assert capsys.readouterr().err.startswith(f"canter: error: no algorithm given, and {f} has no 'algo' key")
