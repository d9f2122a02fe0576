"""The errors for unknown config keys: the closest valid keys, a run key given as a hyperparameter,
and Stable-Baselines3 / rl-zoo3 names that canter spells otherwise (:func:`canter.config.resolve_config`)."""
from __future__ import annotations

import dataclasses
import difflib
import re
import sys
import typing
from typing import Any

from canter.errors import CanterError, closest, cut, unknown


def _keys_hint(algo: str) -> str:
    """Where the valid config keys are listed (for an unknown key without a close match)."""
    return f"'canter train {algo} --help' lists the hyperparameters, a run's config.yaml every key"


#: Stable-Baselines3 / rl-zoo3 names that canter spells otherwise: closest-spelling matches pointed elsewhere
#: (learning_rate -> 'clip_range' for PPO, 'learning_starts' for DQN; n_timesteps -> PPO's rollout 'n_steps';
#: activation_fn -> 'activation' or 'vectorization')
OTHER_NAMES = {"learning_rate": "lr", "n_timesteps": "max_steps", "total_timesteps": "max_steps",
               "stats_window_size": "reward_window", "eval_freq": "eval_every", "n_eval_episodes": "eval_episodes",
               "activation_fn": "activation", "callback": "callbacks", "n_sampled_goal": "her_goals",
               "goal_selection_strategy": "her_strategy", "deterministic": "eval_deterministic",
               "save_freq": "checkpoint_every", "log_interval": "log_every",  # (sde_sample_freq, target_update_interval)
               "max_no_improvement_evals": "early_stopping"}  # (it was answered 'log_every')

#: gymnasium.make's arguments given as config keys: the closest spelling of max_episode_steps was 'max_steps', the
#: run's step budget (a run of 200 steps where episodes of 200 were meant)
ENV_MAKE_KEYS = ("max_episode_steps",)

#: Stable-Baselines3 callback arguments counted in the callback's calls, one per vector step (n_envs env steps), where
#: canter's keys count env steps of all the copies together: a value ported as it is acted n_envs times as often
PER_VECTOR_STEP = {"eval_freq", "save_freq"}

#: Stable-Baselines3 callback arguments counted one short of canter's key -> their callback: StopTrainingOnNoModelImprovement
#: stops when its count of evaluations without a new best exceeds max_no_improvement_evals (at the (M+1)th), canter's
#: early_stopping P at the Pth (as Keras's patience): a value ported as it is stopped one evaluation early
ONE_MORE = {"max_no_improvement_evals": "StopTrainingOnNoModelImprovement"}


def one_more_note(name: str, ours: str) -> str:
    """How a :data:`ONE_MORE` argument ``name`` ports to canter's ``ours``, said after the name: ``of CALLBACK, which
    ...: ours = name + 1``."""
    return (f"of {ONE_MORE[name]}, which stops after more than {name} evaluations without a new best, "
            f"canter's {ours} after that many: {ours} = {name} + 1")


#: command-line options that are no config keys ('run_dir: runs/x' in a -f file was answered '75 choices')
FLAG_ONLY = {"run_dir": "--run-dir DIR (make_trainer(..., run_dir=DIR) from Python)", "quiet": "--quiet",
             "resume": "canter train --resume RUN_DIR", "config": "-f FILE", "config_file": "-f FILE"}


#: Stable-Baselines3 arguments that are several canter keys, or none: the closest spellings misled
#: (policy_kwargs -> 'policy_hparams', a multi-agent run's per-policy settings; verbose -> '75 choices')
SB3_ONLY = {
    "policy_kwargs": "its entries are hyperparameters of their own, such as net_arch (a list of layer widths, or "
                     "dict(pi=[...], vf=[...]) for actor and critic) and activation (for activation_fn: 'tanh', "
                     "'relu', ...); 'canter train ALGO --help' lists them",
    "verbose": "canter shows progress unless --quiet (Python: quiet=False shows it)",
    "tensorboard_log": "TensorBoard event files go to the run directory (run_dir), on unless tensorboard: false",
    "policy": "the networks follow the observations (MlpPolicy; CnnPolicy for images, MultiInputPolicy for Dict "
              "observations: the encoder hyperparameter, auto by default); a model of one's own is model: NAME (a multi-agent run's "
              "shared, type or agent is policies)",
    "vec_env_cls": "vectorization: async for SubprocVecEnv (a process per env copy), sync for DummyVecEnv",
    "replay_buffer_class": "HerReplayBuffer is her_goals: N (SB3's n_sampled_goal) with her_strategy "
                           "(goal_selection_strategy) on any off-policy algorithm",
    "replay_buffer_kwargs": "HerReplayBuffer's n_sampled_goal is her_goals, goal_selection_strategy her_strategy",
    "monitor_wrapper": "canter records every training episode's return and length itself (history.parquet)",
    "features_extractor_class": "the observation encoder is the encoder hyperparameter of the algorithms that have "
                                "one (auto, nature, impala, flat, multi, or module:Class of one's own)",
    "features_extractor_kwargs": "an encoder of one's own (encoder: module:Class) keeps its settings in its class",
    "optimizer_class": "each algorithm has its optimizer (Adam; A2C and ACER: the optimizer hyperparameter, rmsprop "
                       "or adam), its settings hyperparameters such as adam_eps; 'canter train ALGO --help' lists them",
    "optimizer_kwargs": "the optimizer's settings are hyperparameters (lr, adam_eps, optimizer_eps, ...); "
                        "'canter train ALGO --help' lists them",
    # (it was "did you mean 'n_envs' or 'min_lr' or 'min_delta'?")
    "min_evals": "StopTrainingOnNoModelImprovement's evaluations before it starts counting: canter has no such "
                 "delay, early_stopping counts from the first evaluation (which sets the best; each later one "
                 "without a new best counts), so a run slow to start improving takes a larger early_stopping",
}


#: an env's wrappers given as a config key (rl-zoo3's env_wrapper, vec_env_wrapper and frame_stack; a list of
#: wrappers): canter has no such key, the closest spellings misled ('env_kwargs', which only passes arguments to the
#: env's constructor; frame_stack -> 'central_state'; wrappers -> '82 choices')
WRAPPER_KEYS = {
    "env_wrapper": "rl-zoo3's", "env_wrappers": None, "wrappers": None, "wrapper": None,
    "vec_env_wrapper": "rl-zoo3's", "frame_stack": "rl-zoo3's",
}
_WRAPPERS_HOWTO = ("canter has no wrapper list: wrap the env in a factory of your own, @canter.register('env', "
                   "'MyEnv-v0') on a function that returns the wrapped gymnasium.make(...) (or gymnasium.register with "
                   "such an entry point) in an importable module, and pass --env my_pkg.envs:MyEnv-v0 (env_kwargs are "
                   "its arguments)")
_WRAPPER_NOTES = {
    "vec_env_wrapper": "; VecNormalize is the normalize_obs and normalize_reward hyperparameters, VecFrameStack an Atari "
                       "env's frame_stack (env_kwargs: {frame_stack: 4})",
}
#: the keys whose answer starts with canter's own setting, before the wrapper factory
_WRAPPER_FIRST = {"frame_stack": "an Atari env's frame stack is its env_kwargs' frame_stack (env_kwargs: {frame_stack: 4}); "
                                 "other envs stack frames with gymnasium.wrappers.FrameStackObservation, and "}


def _wrapper_key(name: str, key: str, run_keys: Any, hp_keys: Any) -> CanterError | None:
    """The error for a list of env wrappers given as a config key (:data:`WRAPPER_KEYS`), or None for another key."""
    head = name.split(".", 1)[0]
    if head not in WRAPPER_KEYS or head in run_keys or head in hp_keys:
        return None
    library = f" ({WRAPPER_KEYS[head]})" if WRAPPER_KEYS[head] else ""
    if head in _WRAPPER_FIRST:
        return CanterError(f"unknown config key '{key}'{library}: {_WRAPPER_FIRST[head]}{_WRAPPERS_HOWTO}")
    return CanterError(f"unknown config key '{key}'{library}: {_WRAPPERS_HOWTO}{_WRAPPER_NOTES.get(head, '')}")


#: Tianshou's trainer, collector and policy arguments that canter spells otherwise (the closest spellings misled:
#: episode_per_test -> 'per_eps', test_num -> nothing)
TIANSHOU_NAMES = {"episode_per_test": "eval_episodes", "test_num": "eval_envs", "training_num": "n_envs",
                  "discount_factor": "gamma", "estimation_step": "n_step", "target_update_freq": "target_update_interval",
                  "repeat_per_collect": "n_epochs"}

#: Tianshou's arguments that are several canter settings, or a hook: step_per_epoch was answered "did you mean
#: 'per_eps'?", update_per_step "'per_eps' or 'plateau_patience'", stop_fn and save_best_fn with "82 choices"
TIANSHOU_ONLY = {
    "max_epoch": "canter trains for max_steps env steps (max_epoch x step_per_epoch) and evaluates every eval_every",
    "epoch": "canter trains for max_steps env steps (max_epoch x step_per_epoch) and evaluates every eval_every",
    "step_per_epoch": "canter evaluates every eval_every env steps (a Tianshou epoch's test) until max_steps",
    "step_per_collect": "the env steps collected between updates are hparams.train_freq (off-policy) or hparams.n_steps "
                        "per env (on-policy)",
    "episode_per_collect": "an off-policy run collects hparams.train_freq episodes between training phases with "
                           "hparams.train_freq_unit: episode (train_freq: [N, episode]); on-policy rollouts are "
                           "hparams.n_steps per env",
    "update_per_step": "an off-policy run takes hparams.gradient_steps updates every hparams.train_freq env steps",
    "stop_fn": "give target_reward, or a should_stop hook returning a reason (hooks={'should_stop': fn})",
    "save_best_fn": "a run directory (run_dir) saves checkpoints/best at each new best evaluation; a function of your "
                    "own is an on_best hook (hooks={'on_best': fn})",
    "save_checkpoint_fn": "a run directory (run_dir) saves checkpoints every checkpoint_every steps; a function of your "
                          "own is an on_checkpoint hook (hooks={'on_checkpoint': fn})",
    "resume_from_log": "continue a run directory with canter.resume(run_dir) (canter train --resume RUN_DIR)",
    "train_fn": "a function called before each collection is a before_collect hook (hooks={'before_collect': fn})",
    "test_fn": "a function called after each evaluation is an on_evaluate hook (hooks={'on_evaluate': fn})",
    "logger": "TensorBoard event files go to the run directory (run_dir), on unless tensorboard: false",
}


def _other_name(key: str, run_keys: Any, hp_keys: Any, algo: str | None = None) -> CanterError | None:
    """The error for a key that Stable-Baselines3 / rl-zoo3 or Tianshou use for what canter calls otherwise (where
    canter's name is another algorithm's hyperparameter, ``estimation_step`` for PPO, naming those algorithms), or
    for a command-line option given as a config key (``run_dir``), or None. A key of one policy's hyperparameters
    (``policy_hparams.NAME.learning_rate``) is named in that policy's (``policy_hparams.NAME.lr``)."""
    section = re.match(r"hparams\.|policy_hparams\.[^.]+\.", key)
    prefix = section[0] if section else ""
    name = key[len(prefix):]
    if name in FLAG_ONLY and name not in run_keys and name not in hp_keys:
        return CanterError(f"unknown config key '{key}': it is an option of the command, {FLAG_ONLY[name]}")
    if name == "user_modules" and "imports" in run_keys:  # the closest spelling was 'lr_schedule'
        return CanterError(f"unknown config key '{key}'; a config lists the modules to import as 'imports' (a "
                           "checkpoint's JSON records them as user_modules)")
    if name in ENV_MAKE_KEYS and "env_kwargs" in run_keys and name not in hp_keys:
        return CanterError(f"unknown config key '{key}': it is an argument of the env's gymnasium.make, given in "
                           f"env_kwargs (env_kwargs: {{{name}: ...}} in YAML, --set env_kwargs.{name}=...)")
    wrappers = _wrapper_key(name, key, run_keys, hp_keys)
    if wrappers is not None:
        return wrappers
    for only, library in ((SB3_ONLY, "Stable-Baselines3"), (TIANSHOU_ONLY, "Tianshou")):
        head = name.split(".", 1)[0]  # policy_kwargs.net_arch: an entry of SB3's mapping
        if head in only and head not in run_keys and head not in hp_keys:
            return CanterError(f"unknown config key '{key}' ({library}'s): {only[head]}")
    if name not in OTHER_NAMES and name not in TIANSHOU_NAMES and not (algo and other_owners(name, algo)):
        # (another algorithm's hyperparameter, DQN's learning_starts for PPO, is named as one, not as its closest
        # other library's name: it was "canter calls it 'hparams.lr' (Stable-Baselines3's 'learning_rate')")
        # a misspelling of another library's name (learnin_rate) is answered as the name is, when it looks more
        # like that name than like any of canter's keys (it was offered 'clip_range')
        # (other algorithms' hyperparameters among the choices: learning_start for PPO looks most like DQN's
        # learning_starts, and was answered "canter calls it 'hparams.lr' (Stable-Baselines3's 'learning_rate')")
        others = _other_hparams(algo) if algo else set()
        near = closest(name, [*OTHER_NAMES, *TIANSHOU_NAMES, *run_keys, *hp_keys, *others], n=1)
        if near and near[0] not in run_keys and near[0] not in hp_keys:
            if near[0] in others and near[0] not in OTHER_NAMES and near[0] not in TIANSHOU_NAMES:
                return CanterError(f"unknown config key '{key}'; did you mean '{prefix}{near[0]}'? "
                                   f"{other_owners(near[0], str(algo))} (a config written for another algorithm?)")
            name = near[0]
    ours, library = OTHER_NAMES.get(name), "Stable-Baselines3"
    if ours is None:
        ours, library = TIANSHOU_NAMES.get(name), "Tianshou"
    if ours is None:
        return None
    if ours not in run_keys and ours not in hp_keys:  # was the closest spellings: 'max_steps' for PPO's n_step
        owners = other_owners(ours, algo) if algo else None
        return None if owners is None else CanterError(
            f"unknown config key '{key}'; canter calls it '{prefix or 'hparams.'}{ours}' ({library}'s '{name}'), but "
            f"{owners}")
    where = f"{prefix or 'hparams.'}{ours}" if ours in hp_keys else ours
    note = (f", which counts its callback's calls, one per vector step: {ours} counts the env steps of all the env "
            f"copies, so {ours} = {name} x n_envs" if name in PER_VECTOR_STEP and library == "Stable-Baselines3" else "")
    if name in ONE_MORE and library == "Stable-Baselines3":
        note = f" {one_more_note(name, ours)}"
    message = f"unknown config key '{key}'; canter calls it '{where}' ({library}'s '{name}'{note})"
    if prefix and ours not in hp_keys:  # a run setting given under hparams / a policy's: said so, as for its own name
        shared = ", shared by every policy," if prefix.startswith("policy_hparams.") else ","
        message += (f", a run setting{shared} not a hyperparameter: give it at the top level ('{ours}: ...' in YAML, "
                    f"--set {ours}=...)")
    return CanterError(message)


def misspelled_argument(key: str, arguments: list[str], run_keys: Any, hp_keys: Any, function: str,
                        value: Any = None) -> None:
    """Raise a one-line :class:`CanterError` for a keyword argument ``key`` of ``function`` (``canter.make_trainer``)
    that is neither a run key nor a hyperparameter but looks most like one of the function's own ``arguments``
    (``quite``: 'quiet', ``rundir``: 'run_dir'), which the unknown config key's error, naming config keys only,
    never offered, or, with a string ``value``, like its ``algo`` or ``env`` (``env_id='CartPole-v1'`` was 'no
    environment given'); otherwise return (that error, or another library's name, comes later)."""
    if key in run_keys or key in hp_keys or key.startswith("hparams.") or any(
            key in names for names in (OTHER_NAMES, SB3_ONLY, TIANSHOU_ONLY, TIANSHOU_NAMES)):
        return
    named = closest(key, ["algo", "env"]) if isinstance(value, str) and "eval" not in key else []  # eval_env: not env
    if named:
        raise CanterError(f"{function} got an unknown keyword argument '{key}'; did you mean '{named[0]}'? "
                          f"(canter.train('ppo', env='CartPole-v1'))")
    near = closest(key, [*arguments, *run_keys, *hp_keys])
    if near and near[0] in arguments:
        raise CanterError(f"{function} got an unknown keyword argument '{key}'; did you mean "
                          + " or ".join(f"'{n}'" for n in near if n in arguments) + "?")


def check_positions(algo: str, env: Any) -> None:
    """A one-line :class:`CanterError` for an env id given as the algorithm (``train("CartPole-v1")``, or the two
    swapped), which was 'unknown algorithm; 24 choices', and for Stable-Baselines3's policy name given as the env
    (``PPO("MlpPolicy", env)`` written ``train("ppo", "MlpPolicy")``), which was an unknown env id."""
    from canter.registry import registered

    if isinstance(env, str) and env in SB3_POLICIES:
        raise CanterError(f"'{env}' is a Stable-Baselines3 policy, not an env: {SB3_ONLY['policy']}; pass the env id, "
                          f"canter.train('{algo}', 'CartPole-v1')")
    if algo in registered("algorithm") or not _is_env_id(algo):
        return
    algos = [env] if isinstance(env, str) and env in registered("algorithm") else ["ppo"]
    raise CanterError(f"'{algo}' is an env id, not an algorithm; the algorithm comes first: "
                      f"canter.train('{algos[0]}', '{algo}')")


#: Stable-Baselines3's policy names (its models' first argument)
SB3_POLICIES = ("MlpPolicy", "CnnPolicy", "MultiInputPolicy", "MlpLstmPolicy", "CnnLstmPolicy", "MultiInputLstmPolicy")


def _is_env_id(name: str) -> bool:
    """Whether ``name`` is a Gymnasium id this process knows (``module:EnvId`` ids are not looked into)."""
    import gymnasium

    return name in gymnasium.registry


def zoo_section(key: str, value: Any, source: str) -> CanterError | None:
    """The error for a top-level key that is an env id holding a mapping (``CartPole-v1: {n_envs: 8, ...}``), as
    rl-zoo3's hyperparameter files nest their settings; None for any other key."""
    if not (isinstance(value, dict) and re.search(r"-v\d+$", key)):
        return None
    return CanterError(f"{source} sets '{key}' to a mapping of settings, as rl-zoo3's hyperparameter files do (one "
                       f"section per env); a canter config has them at the top level: env: {key}, then the settings "
                       "(n_timesteps is max_steps, learning_rate lr)")


def _another_algorithms(key: str, keys: list[str], algo: str) -> CanterError | None:
    """The error for a key that is none of ``keys`` (``algo``'s run's) but a hyperparameter of other registered
    algorithms (``tau`` for PPO: a config written for SAC), naming some of them, then the closest of ``keys``
    (``n_step``, DQN's, for PPO's ``n_steps``); None when no other algorithm has it. Without the owners, the close
    spellings alone misled (DQN's buffer_size for PPO: 'did you mean batch_size?')."""
    name = re.sub(r"^(hparams\.|policy_hparams\.[^.]+\.)", "", key)  # tau of hparams.tau, policy_hparams.NAME.tau
    owners = other_owners(name, algo)
    if owners is None:
        return None
    near = closest(key, keys)
    hint = ("did you mean " + " or ".join(f"'{k}'" for k in near) + "?") if near else f"{_keys_hint(algo)}"
    return CanterError(f"unknown config key '{key}': {owners} (a config written for another algorithm?); {hint}")


def misspelt_section(key: str, run_keys: Any, hp_keys: Any) -> CanterError | None:
    """The error for a dotted key whose first part is a misspelt section (``hparam.lr``, ``Hparams.lr``,
    ``env_kwarg.max_episode_steps``: ``hparams`` or a mapping run key of ``run_keys``), naming the key with that part
    spelt right; None for any other key. The closest spellings of the whole key misled: 'policy_hparams' for
    ``hparam.lr``, 'eval_episodes' for ``env_kwarg.max_episode_steps``."""
    head, dot, rest = key.partition(".")
    if not dot or not rest:
        return None
    mappings = [k for k, (_, tp) in run_keys.items() if dict in (tp, typing.get_origin(tp))]
    near = []
    sections = ["hparams", *mappings]  # only near spellings: model_kwargs is no misspelt env_kwargs
    for section in difflib.get_close_matches(head.lower(), sections, n=3, cutoff=0.75):
        if section == "policy_hparams" and "." not in rest:  # policy_hparams.POLICY.NAME
            continue
        if section != "hparams":
            near.append(f"{section}.{rest}")
        elif "." not in rest:  # hparam.lrr: hparams.lr; another library's name as hparams.NAME names it (_other_name)
            ours = OTHER_NAMES.get(rest) or TIANSHOU_NAMES.get(rest)  # hparam.learning_rate was 'hparams.clip_range'
            named = (f"hparams.{rest}" if rest in hp_keys else f"hparams.{ours}" if ours in hp_keys else
                     ours if ours in run_keys else next((f"hparams.{k}" for k in closest(rest, hp_keys, 1)), None))
            near += [named] if named else []
    if not near:
        return None
    return CanterError(f"unknown config key '{key}'; did you mean " + " or ".join(f"'{k}'" for k in near) + "?")


def _other_configs(algo: str) -> dict[str, Any]:
    """The hyperparameter dataclasses (``Config``) of the registered algorithms other than ``algo``, by name."""
    from canter.registry import registered

    configs = {n: getattr(cls, "Config", None) for n, cls in registered("algorithm").items() if n != algo}
    return {n: c for n, c in configs.items() if dataclasses.is_dataclass(c)}


def _other_hparams(algo: str) -> set[str]:
    """The hyperparameter names of the registered algorithms other than ``algo``."""
    return {field for c in _other_configs(algo).values() for field in c.__dataclass_fields__}


def other_owners(name: str, algo: str) -> str | None:
    """``"ppo has no hyperparameter 'tau', c51, cql, ddpg, dqn and 9 more have one"`` for a hyperparameter ``name``
    of registered algorithms other than ``algo``; None when none has it."""
    owners = sorted(n for n, c in _other_configs(algo).items() if name in c.__dataclass_fields__)
    if not owners:
        return None
    shown = ", ".join(owners[:4]) + (f" and {len(owners) - 4} more" if len(owners) > 4 else "")
    return f"{algo} has no hyperparameter '{name}', {shown} {'has' if len(owners) == 1 else 'have'} one"


def _unknown_hparam(key: str, hp_keys: Any, run_keys: Any, algo: str) -> CanterError:
    """The error for ``hparams.<name>`` that is no hyperparameter of ``algo``: a run key put under
    ``hparams`` (``n_envs``, ``seed``, ``max_steps``) is named as one, else the closest hyperparameters."""
    name = key[len("hparams."):]
    if name in run_keys:
        return CanterError(f"'{key}' is a run setting, not a hyperparameter of {algo}: give it at the top level "
                           f"('{name}: ...' in YAML, --set {name}=...)")
    keys = [f"hparams.{n}" for n in hp_keys]
    return _other_name(key, run_keys, hp_keys, algo) or _another_algorithms(key, keys, algo) or unknown(
        "hyperparameter", key, keys, see=_keys_hint(algo))


def env_object_error(env: Any) -> CanterError:
    """The error for an env given as an object (an env, its class, a factory function) where canter takes an id:
    canter makes its env copies, evaluation envs and a resumed run's envs from the id, so the object has to be
    registered. An env made by ``gymnasium.make`` is pointed at its id (it was a bare 'must be an environment id
    string' that named no way to pass one's own env)."""
    why = "canter makes its env copies, evaluation envs and a resumed run's envs from an id"
    spec_id = getattr(getattr(env, "spec", None), "id", None)
    if not isinstance(env, type) and isinstance(spec_id, str) and hasattr(env, "step"):
        return CanterError(f"'env' must be an environment id string ({why}), got an env made from '{spec_id}': pass "
                           f"env='{spec_id}' (its keyword arguments as env_kwargs; wrappers of your own go in a "
                           f"registered factory: gymnasium.register(ID, entry_point=...))")
    target = env if isinstance(env, type) or not hasattr(env, "step") else type(getattr(env, "unwrapped", env))
    module, name = getattr(target, "__module__", None), getattr(target, "__qualname__", "")
    entry = f"'{module}:{name}'" if callable(target) and module and name.isidentifier() else "..."
    return CanterError(f"'env' must be an environment id string ({why}), got {shown_env(env)}: register it in a "
                       f"module, e.g. gymnasium.register('MyEnv-v0', entry_point={entry}) in my_pkg/envs.py, and pass "
                       f"env='my_pkg.envs:MyEnv-v0'")


def shown_env(env: Any) -> str:
    """``repr(env)``, cut to 100 characters."""
    text = repr(env)
    return text if len(text) <= 100 else text[:97] + "..."


def check_dataset_argument(dataset: Any) -> None:
    """Refuse a dataset given as an object (a :class:`~canter.data.dataset.TransitionDataset`, arrays) where canter
    takes its path: the run records the path, which ``--resume`` reloads and checks. It was 'no environment given;
    pass --env', or with ``env`` a 'must be a str' line holding the arrays' repr."""
    module = sys.modules.get("canter.data.dataset")  # not loaded: no TransitionDataset exists (a cold start stays light)
    if module is not None and isinstance(dataset, module.TransitionDataset):
        raise CanterError("'dataset' takes a dataset's path (the run records it, and --resume reads it again), got a "
                          "TransitionDataset: save it first, data.save('data/name'), and pass dataset='data/name'")


#: the string run settings that take a name or a path, none of which an empty text means: what to give instead
EMPTY_STRING_FIX = {
    "env": "an environment id (e.g. CartPole-v1)",
    "wandb_project": "a W&B project name (default: canter)",
    "init_from": "a run directory or checkpoint to start from (null: new weights)",
    "ray_address": "'auto', host:port or ray://host:port (null: a local Ray)",
}


def check_empty_string(key: str, *values: Any) -> None:
    """Refuse an empty or blank value among ``values`` of the string setting ``key`` (:data:`EMPTY_STRING_FIX`) in
    one line, as a number's empty ``--set`` is refused: ``--set init_from=`` was read as the current directory,
    ``--set wandb_project=`` passed to wandb.init as '', ``--set env=`` as ``--env``'s env."""
    if any(isinstance(value, str) and not value.strip() for value in values):
        raise CanterError(f"'{key}' got an empty value; give {EMPTY_STRING_FIX[key]}")


def check_empty_strings(values: Any, names: bool = True) -> Any:
    """Refuse the run settings ``values`` (a mapping: a :class:`~canter.config.RunConfig`'s ``vars``) whose name or
    path setting is empty (:func:`check_empty_string`); an empty ``model`` or ``agent`` (which was the default without
    a word, where ``' '`` is an unknown name) as before. ``names=False`` (every config built, a saved one's too):
    ``model`` and ``agent`` only, so a run saved before 2026-11-28 with ``wandb_project: ''`` (W&B off, it trained)
    still loads, evaluates and resumes. Returns ``values``."""
    for key in EMPTY_STRING_FIX if names else ():
        check_empty_string(key, values.get(key))
    for key in ("model", "agent"):
        if values.get(key) == "":
            raise CanterError(f"'{key}' is empty: give a registered {key} name or module:Class (null: the default)")
    return values


def check_empty_hparam(cls: type, f: Any, value: Any, key: str, section: str) -> None:
    """Refuse an empty or blank string ``value`` of a hyperparameter (``section``: ``hparams.``) of canter's own
    config class ``cls`` that has no choices (``hparams.encoder``, SAC's ``ent_coef``: a name or number as text, which
    '' is not), its field ``f``'s doc saying what it takes; a user's config's strings are its own to check."""
    if (section and isinstance(value, str) and not value.strip() and cls.__module__.startswith("canter.")
            and not f.metadata.get("choices")):
        raise CanterError(f"'{key}' got an empty value ({f.metadata.get('doc')})")


#: how to make a dataset, the end of every empty-dataset message
DATASET_FIX = "write one with canter collect RUN_DIR --out PATH"


def blank_dataset_error(value: Any, written: str) -> CanterError | None:
    """The one-line error for a ``dataset`` that is empty or blank (``''``, ``' '``: ``Path('')`` is the current
    directory), naming where the user wrote it (``written``: ``--set dataset``, ``dataset in FILE``, a
    benchmark file's ``set``); None for any other value."""
    if isinstance(value, str) and not value.strip():
        return CanterError(f"{written} needs a dataset path, got {value!r} ({DATASET_FIX})")
    return None


def check_blank_dataset(sets_dict: dict[str, Any], argument: Any, file_data: dict[str, Any], config_file: Any) -> None:
    """Refuse an empty ``dataset`` given with ``--set`` or in a config file, naming that: the dataset loader's
    error names the ``--dataset`` flag, which the user did not give. ``argument`` is the arguments' dataset
    (``--dataset``, ``dataset=``): a blank one is left to the loader's error, which names it; else the layer
    that wins is checked, ``--set`` over the arguments over the file."""
    if blank_dataset_error(argument, "") is not None:
        return
    if "dataset" in sets_dict:
        error = blank_dataset_error(sets_dict["dataset"], "--set dataset")
    elif argument is None and file_data and "dataset" in file_data:
        error = blank_dataset_error(file_data["dataset"], f"dataset in {config_file}")
    else:
        error = None
    if error is not None:
        raise error


def online_dataset_error(algo: str) -> CanterError:
    """The refusal of a ``dataset`` given to an online algorithm ``algo``, naming the offline ones."""
    from canter.registry import lookup, names

    offline = ", ".join(n for n in names("algorithm") if lookup("algorithm", n).family == "offline")
    return CanterError(f"'dataset' is only for offline algorithms ({offline}); {algo} learns from the env")


def algo_value_error(value: Any, where: str) -> CanterError | None:
    """The error for a config's ``algo`` that is no algorithm name (a file's ``algo: [ppo]``, ``algo: 5``; an empty
    ``--set algo=``), given in ``where``: it was "is for algorithm '['ppo']'"; None for a name."""
    if isinstance(value, str) and value.strip():
        return None
    kinds = ((bool, "a bool"), ((int, float), "a number"), ((list, tuple), "a list"), (dict, "a mapping"),
             (str, "an empty name"))
    kind = next((what for types, what in kinds if isinstance(value, types)), type(value).__name__)
    return CanterError(f"'algo' in {where} must be an algorithm name (e.g. 'ppo'; canter list shows them), got "
                       f"{kind}" + ("" if value == "" else f" ({cut(repr(value))})"))
