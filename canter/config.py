"""Typed configuration: one dataclass per algorithm plus the run config, YAML, overrides, validation.

Every field is declared with :func:`~canter.config_values.hp`, which carries a one-line doc, an optional range or
choices, and (for tuning) an optional search space. Unknown keys, wrong types and values out of
range raise :class:`~canter.errors.CanterError` naming the key and the closest valid one.
"""
from __future__ import annotations

import dataclasses
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Collection
from typing import Any

from canter.config_errors import (_another_algorithms, _keys_hint, _other_name, _unknown_hparam, algo_value_error,
                                  check_blank_dataset, check_dataset_argument, check_empty_hparam, check_empty_string,
                                  check_empty_strings, misspelt_section, online_dataset_error, zoo_section)
from canter.config_imports import check_config_path, config_imports, layered_imports, load_config_file
from canter.config_values import (MAX_CRITICS, MAX_ENVS, MAX_EPISODES, MAX_GRADIENT_STEPS, MAX_PASSES,  # noqa: F401
                                  check_entry_once, check_range, coerce, entries_last, hp, is_null_word,  # re-exported
                                  left_empty, readable_type, sb3_net_arch, set_nested, split_train_freq, type_name)
from canter.config_layers import parse_set, preset_layers, preset_path, set_items  # noqa: F401 (re-exported)
from canter.devices import resolve_device
from canter.errors import CanterError, unknown
from canter.preset_target import note_preset_target
from canter.yaml_io import dashed_pairs, glued_word, parse_yaml_value


def fields_of(cls: type) -> dict[str, tuple[dataclasses.Field, Any]]:
    """Map field name -> (dataclass field, resolved type) for a config dataclass."""
    hints = typing.get_type_hints(cls)
    return {f.name: (f, hints[f.name]) for f in dataclasses.fields(cls)}


def build(cls: type, values: dict[str, Any], section: str = "", from_python: Collection[str] = ()) -> Any:
    """Create config ``cls`` from a mapping, coercing and validating every value. A ``section``
    (``hparams.``) marks an algorithm's hyperparameters, whose floats must fit float32. The keys in ``from_python``
    came from Python's arguments: a None among them that is refused is named None, not YAML's null."""
    specs = fields_of(cls)
    float32 = bool(section)
    kwargs = {}
    if "train_freq" in values and "train_freq_unit" in specs:  # SB3's train_freq: [N, episode]: its unit wins
        pair = split_train_freq(values["train_freq"], f"{section}train_freq")
        if pair is not None:
            values = {**values, "train_freq": pair[0], "train_freq_unit": pair[1]}
    for key, raw in values.items():
        full = f"{section}{key}"
        if key not in specs:
            raise unknown("config key", full, [f"{section}{k}" for k in specs], see=None)
        f, tp = specs[key]
        try:
            value = coerce(tp, raw, full)
        except CanterError as exc:  # seed=None in Python said 'got null'
            if key in from_python and str(exc).endswith("got null"):
                raise CanterError(f"{str(exc)[:-4]}None") from None
            raise
        check_empty_hparam(cls, f, value, full, section)  # hparams.encoder= was 'unknown encoder' when built
        check_range(f, value, full, float32)
        kwargs[key] = value
    obj = cls(**kwargs)
    for key, (f, _) in specs.items():
        if key not in kwargs:
            check_range(f, getattr(obj, key), f"{section}{key}", float32)
    validate = getattr(obj, "validate", None)
    if validate is not None:
        try:
            validate()
        except CanterError as exc:  # a config's validate() names its keys 'hparams.KEY': name them in this section
            if not section or section == "hparams.":
                raise
            raise CanterError(re.sub(r"\bhparams\.", section, str(exc))) from None
        except ValueError as exc:  # a user's Config refusing a value as Python does: its message, in one line
            if cls.__module__.split(".")[0] == "canter":
                raise  # canter's own validate() raises CanterError: anything else is a bug, whose traceback is wanted
            raise CanterError(f"invalid {section.rstrip('.') or 'config'} ({cls.__module__}:{cls.__qualname__}."
                              f"validate): {exc}") from None
    return obj


def build_saved_hparams(cls: type, values: dict[str, Any], where: str = "the checkpoint") -> Any:
    """Config ``cls`` from a checkpoint's hyperparameters ``values``, those it predates as they were then:
    ``cls.former_defaults`` maps a hyperparameter whose default changed after checkpoints first went without
    it to the value such a checkpoint was trained with (a checkpoint saves every hyperparameter it knew). One that
    ``cls`` no longer has (renamed in a user's algorithm since) is a one-line :class:`CanterError` saying it is
    ``where``'s (``checkpoint PATH``), not an unknown key the user gave."""
    gone = [k for k in values if k not in fields_of(cls)]
    if gone:
        raise saved_hparam_gone(cls, gone[0], where)
    return build(cls, {**getattr(cls, "former_defaults", {}), **values}, section="hparams.")


def saved_hparam_gone(cls: type, key: str, where: str, section: str = "hparams.") -> CanterError:
    """The error for hyperparameter ``key`` (of ``section``: ``policy_hparams.P.`` for a multi-policy run's policy) that
    ``where`` (``checkpoint PATH``) was trained with and algorithm config ``cls`` no longer has."""
    from canter.errors import closest

    near = closest(key, fields_of(cls))
    hint = f" (renamed {' or '.join(repr(n) for n in near)}?)" if near else ""
    return CanterError(f"{where} was trained with hyperparameter '{section}{key}', which the algorithm's config "
                       f"{cls.__module__}:{cls.__qualname__} no longer has{hint}: the algorithm changed since the "
                       f"checkpoint was saved; load it with the algorithm as it was, or give the hyperparameter back")


def to_dict(cfg: Any) -> dict[str, Any]:
    """Plain-data (YAML/JSON-safe) view of a config dataclass."""
    return dataclasses.asdict(cfg)


def describe(cls: type) -> list[tuple[str, str, Any, str]]:
    """(name, type, default, doc) for every field of a config class; used by ``--help``."""
    out = []
    for name, (f, tp) in fields_of(cls).items():
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        out.append((name, type_name(tp), default, f.metadata.get("doc", "")))
    return out


@dataclass
class RunConfig:
    """Everything about a run except the algorithm's hyperparameters (those live in ``hparams``)."""

    algo: str = hp("ppo", "registered algorithm name or 'module:Class'")
    imports: list = hp([], "modules imported before the run's names are looked up: user code that registers "
                       "algorithms, models, agents, envs or encoders by name, e.g. [my_pkg.components]")
    env: str = hp("CartPole-v1", "Gymnasium environment id (or a canter-registered env)")
    seed: int = hp(0, "random seed for torch, numpy, python and the environments", low=0, high=2**32 - 1)
    n_envs: int | None = hp(None, "parallel environments (null: the algorithm's default)", low=1, high=MAX_ENVS)
    max_steps: int = hp(100_000, "environment-step budget", low=1)
    target_reward: float | None = hp(None, "stop when the mean evaluation return reaches this (null: never)")
    eval_episodes: int = hp(10, "episodes per evaluation, with the policy eval_deterministic says (0: no evaluation "
                            "at all, not even at the end: no best checkpoint, no target_reward)", low=0,
                            high=MAX_EPISODES)
    eval_deterministic: bool = hp(
        True, "evaluate the deterministic policy (false: the policy's samples, DQN's epsilon-greedy moves, from a "
        "stream seeded per evaluation, as rl-zoo3 evaluates Atari, where a greedy policy can get stuck); the "
        "evaluations, the best checkpoint and target_reward follow it, and canter eval / play default to it")
    eval_every: int = hp(10_000, "evaluate every this many environment steps (0: only at the end)", low=0)
    eval_envs: int = hp(5, "parallel environments used for evaluation", low=1, high=MAX_ENVS)
    checkpoint_every: int = hp(50_000, "save a periodic checkpoint every this many steps (0: never)", low=0)
    keep_checkpoints: int | None = hp(
        None, "keep only the newest this many periodic step-N checkpoints: an older one is deleted once a newer one "
        "is completely written; best, last and other names are never deleted (null: keep all)", low=1)
    vectorization: str = hp(
        "auto", "how to vectorise the env: auto (the env's native vectorised version where it has one: Atari always, "
        "others from 4 copies; else sync), native, sync, async",
        choices=("auto", "native", "sync", "async"),
    )
    env_kwargs: dict = hp({}, "keyword arguments passed to gymnasium.make")
    eval_env_kwargs: dict = hp(
        {}, "the evaluation env only: keyword arguments merged over env_kwargs (a key here wins), as "
        "Stable-Baselines3's EvalCallback on its own eval_env, e.g. {max_episode_steps: 1000}; canter eval and "
        "--record-every use them too")
    policies: str = hp(
        "shared", "multi-agent (pettingzoo:) envs: shared (one policy acts for every agent), type (one policy per "
        "agent type, the name before a trailing _N: adversary_0 -> adversary), agent (one policy per agent) or joint "
        "(one sub-env per env copy, acting for all its agents: set for qmix)",
        choices=("shared", "type", "agent", "joint"),
    )
    policy_hparams: dict = hp(
        {}, "multi-agent runs with several policies (policies: type | agent): hyperparameters of single policies over "
        "hparams, {policy: {name: value}} (e.g. {adversary: {lr: 0.001}}); 'algo' trains one with another on- or "
        "off-policy algorithm, from that algorithm's defaults (e.g. {adversary: {algo: dqn}}); a policy held fixed: "
        "algo: random (uniform random actions) or frozen: true (init_from's weights, never trained)")
    central_state: bool = hp(
        False, "multi-agent (pettingzoo:) envs: each agent's observation also carries the global state and the "
        "agent's index, which only the critic sees (a centralised critic; needs hparams.encoder=split; set for mappo)")
    torch_threads: int | None = hp(
        None, "compute threads: torch's intra-op pool, or NumPy's BLAS for updates that multiply through NumPy "
        "(DQN's hand-derived path) (null: 2 for layers over 128 units on 4+ CPUs, else 1)", low=1)
    flush_denormal: bool = hp(
        True, "flush denormal floats (below 1.2e-38) to zero on the CPU while training: Adam moments of parameters "
        "that get zero gradients (dead ReLU units) decay into denormals, which are ~100x slower to compute with"
    )
    keep_freed_memory: bool = hp(
        True, "keep memory freed by torch inside the process (glibc mallopt) instead of returning it to the OS at "
        "once, so large tensors rebuilt every update reuse warm pages instead of page-faulting (process-wide)"
    )
    conv_precision: str = hp(
        "float32", "arithmetic of convolutional encoders: float32, or bfloat16 (torch.autocast inside the encoder; "
        "~2x faster on CPUs with AMX, less precise; the layers after it stay float32)", choices=("float32", "bfloat16"))
    device: str = hp("cpu", "torch device: cpu, cuda, cuda:N or auto (cuda if torch finds a GPU); runs record the result")
    max_seconds: float | None = hp(None, "wall-clock budget in seconds (null: none)", low=0, low_open=True)
    model: str | None = hp(None, "registered model name or 'module:Class' (null: the algorithm's default)")
    agent: str | None = hp(None, "registered agent name or 'module:Class' (null: the generic Agent)")
    tensorboard: bool = hp(True, "write TensorBoard event files to the run directory")
    wandb: bool = hp(False, "log to Weights & Biases (offline unless WANDB_MODE says otherwise)")
    wandb_project: str = hp("canter", "Weights & Biases project name")
    log_every: int = hp(1, "yield/log one record every this many trainer iterations", low=1)
    record_every: int = hp(
        0, "record an evaluation episode (the policy eval_deterministic says) as MP4 in RUN_DIR/videos every this many "
        "steps and at the end (0: never)",
        low=0,
    )
    # -- trainer control (canter/callbacks.py, canter/schedules.py, canter/trainers/guard.py) --
    callbacks: list = hp([], "Callback classes to attach: 'module:Name' or {'module:Name': {kwargs}}")
    hooks: dict = hp({}, "hook name -> 'module:function' (or a list of them), e.g. {after_update: 'my.mod:fn'}")
    monitor: str = hp("eval", "what counts as improvement for early stopping and plateau LR: eval "
                      "(mean evaluation return) or rolling (mean of the last reward_window training episodes); "
                      "the best checkpoint always follows the evaluation return",
                      choices=("eval", "rolling"))
    reward_window: int = hp(100, "training episodes in the reward buffer (rolling return statistics)", low=1)
    min_delta: float = hp(0.0, "a monitored return must beat the best by more than this to count as improvement", low=0)
    early_stopping: int | None = hp(None, "stop after this many evaluations without improvement (null: never)", low=1)
    plateau_patience: int | None = hp(None, "multiply every learning rate by plateau_factor after this many "
                                      "evaluations without improvement (null: never)", low=1)
    plateau_factor: float = hp(0.5, "learning-rate factor applied on a plateau", low=0, high=1, low_open=True)
    min_lr: float = hp(0.0, "lower bound for learning rates lowered by lr_decay, plateaus or the divergence guard", low=0)
    lr_decay: str = hp("constant", "learning-rate multiplier over the step budget, applied to every optimizer on top of "
                       "the algorithm's own schedule: constant, linear, cosine or step",
                       choices=("constant", "linear", "cosine", "step"))
    lr_decay_final: float = hp(0.0, "final multiplier of linear/cosine lr_decay", low=0, high=1)
    lr_decay_every: int = hp(100_000, "env steps between step-lr_decay multiplications", low=1)
    lr_decay_factor: float = hp(0.5, "multiplier of each step-lr_decay", low=0, high=1, low_open=True)
    divergence_guard: str = hp("stop", "on a non-finite loss, gradient, parameter or observation: stop (keep the last "
                               "good checkpoint), restore (reload the last good state, lower the LR) or off",
                               choices=("stop", "restore", "off"))
    divergence_lr_factor: float = hp(0.5, "learning-rate factor after each divergence restore", low=0, high=1,
                                     low_open=True)
    divergence_max_restores: int = hp(3, "divergence restores before the guard stops the run", low=0)
    dataset: str | None = hp(
        None, "offline algorithms (bc, cql, td3bc): the dataset to learn from, written by canter collect; their steps "
        "(max_steps, eval_every, checkpoint_every) then count gradient updates")
    init_from: str | None = hp(
        None, "a run directory or checkpoint whose weights and observation statistics a new run starts from (same "
        "algorithm and spaces; counters, optimizers and buffers start fresh; SB3's PPO.load(path, env=...) then "
        "learn); null: new weights")
    explorers: int = hp(0, "explorer actors on Ray, each with n_envs envs (0: one process, no Ray)", low=0,
                        high=MAX_ENVS)
    ray_address: str | None = hp(None, "Ray cluster to join with explorers: 'auto' or host:port (null: a local Ray)")
    max_policy_lag: int | None = hp(
        None, "asynchronous explorers (IMPALA, APPO): drop rollouts collected with weights more than this many "
        "versions old (null: learn from every rollout)", low=0,
    )
    explorer_timeout: float | None = hp(
        None, "seconds a Ray explorer may take to return a rollout (or a new one to start, at least 60 s) before it "
        "counts as failed: killed and replaced (null: 10x the run's slowest rollout so far, at least 60 s, and 600 s "
        "before its first; 0: wait forever)", low=0,
    )

    def validate(self) -> None:
        """Cross-field checks."""
        check_empty_strings(vars(self), names=False)  # '' was the default model; a new config's names: resolve_config
        if self.eval_episodes == 0:  # no evaluations: what acts on them would silently never act
            for key, why in (("target_reward", "is checked at evaluations"), ("early_stopping", "counts evaluations"),
                             ("plateau_patience", "counts evaluations")):
                if getattr(self, key) is not None:
                    raise CanterError(f"'{key}' {why}, but eval_episodes: 0 runs none; drop it (--set {key}=null) or "
                                      f"set 'eval_episodes' >= 1")
            if self.divergence_guard == "restore":
                raise CanterError("divergence_guard: restore goes back to the state of the last evaluation, but "
                                  "eval_episodes: 0 runs none; use divergence_guard: stop, or 'eval_episodes' >= 1")
        if self.keep_checkpoints is not None and self.checkpoint_every == 0:  # nothing to keep or delete
            raise CanterError("'keep_checkpoints' keeps the newest periodic checkpoints, but checkpoint_every: 0 saves "
                              "none; drop it (--set keep_checkpoints=null) or set 'checkpoint_every' > 0")
        for key in ("early_stopping", "plateau_patience"):  # they count evaluations: with one, at the end, none acts
            if getattr(self, key) is not None and self.eval_every == 0:
                raise CanterError(f"'{key}' counts evaluations, but eval_every: 0 evaluates only at the end; set "
                                  f"'eval_every' > 0 (e.g. --eval-every 10000)")
        from canter.callbacks import check_callback_config

        check_callback_config(self.callbacks, self.hooks)
        from canter.multiagent_config import check_multiagent_run

        check_multiagent_run(self)
        self.device = resolve_device(self.device)  # 'auto' is recorded as the device it chose
        if self.ray_address is not None and not self.explorers:
            raise CanterError("'ray_address' needs explorers: add --explorers N (e.g. --explorers 4)")
        from canter.distributed.cluster import ray_address_ok

        if self.ray_address is not None and not ray_address_ok(self.ray_address):
            raise CanterError(f"'ray_address' must be 'auto', host:port or ray://host:port, got '{self.ray_address}'")


def resolve_config(
    algo: str, env: str | None = None, config_file: str | Path | None = None, sets: list[str] | tuple = (),
    hparams: dict[str, Any] | None = None, from_python: bool = False, **run_overrides: Any,
) -> tuple[RunConfig, Any]:
    """Compose the run config: defaults < shipped preset < ``config_file`` < overrides < ``sets``.
    ``from_python``: the overrides and ``hparams`` are Python's arguments (``canter.make_trainer``'s), whose None
    a refusal names as None (YAML's null elsewhere: a bench spec's overrides are a file's).

    Keys may be run keys (``seed``), hyperparameters (``hparams.lr``) or bare hyperparameter
    names (``lr``). Returns ``(RunConfig, algorithm config)``; the algorithm class is
    ``lookup("algorithm", run.algo)``.
    """
    from canter.multiagent_config import split_policy_net_arch
    from canter.registry import lookup, registered_name

    if config_file is not None:
        check_config_path(config_file)
    file_data = load_config_file(config_file) if config_file else {}
    config_imports(layered_imports(file_data, run_overrides, sets))  # they register the names looked up below
    algo_cls = lookup("algorithm", algo)
    # the name it is registered under, not the class's ``name`` (a registered subclass of PPO inherits
    # name = "ppo": the run would be built, saved and loaded as PPO)
    algo_name = registered_name("algorithm", algo)

    def other_algo(name: Any) -> bool:  # registered names are found case-insensitively (PPO is ppo)
        return name is not None and name not in (algo, algo_name) and not (
            isinstance(name, str) and ":" not in name and name.lower() == algo_name.lower())

    if other_algo(file_data.get("algo")):
        raise algo_value_error(file_data["algo"], str(config_file)) or CanterError(
            f"{config_file} is for algorithm '{file_data['algo']}', not '{algo}'")
    sets_dict, parsed_sets = set_items(sets)  # policy_hparams={...} as entries, each value read where parsed_sets
    if other_algo(sets_dict.get("algo")):
        raise algo_value_error(sets_dict["algo"], "--set") or CanterError(
            f"--set algo={sets_dict['algo']} cannot change the algorithm; name it as the command's argument: canter "
            f"train {sets_dict['algo']} ...")
    if sets_dict.get("env") and env and sets_dict["env"] != env:
        raise CanterError(f"--env {env} and --set env={sets_dict['env']} disagree; give the env once")
    check_dataset_argument(run_overrides.get("dataset"))
    if getattr(algo_cls, "family", None) == "offline":  # an online one is refused as taking no dataset at all
        # an empty dataset named where it was given (the loader's error names --dataset)
        check_blank_dataset(sets_dict, run_overrides.get("dataset"), file_data, config_file)
    check_empty_string("env", sets_dict.get("env"), env, file_data.get("env"), run_overrides.get("env"))  # '' was None
    env_id = sets_dict.get("env") or env or file_data.get("env") or run_overrides.pop("env", None)
    if not env_id:  # an offline run: the dataset knows its env
        # the first layer that gives one, '' too: an empty --dataset is refused naming it, not as a missing env
        dataset = next((d for d in (sets_dict.get("dataset"), run_overrides.get("dataset"), file_data.get("dataset"))
                        if d is not None), None)
        if is_null_word(dataset):  # --set dataset=null, --dataset null: no dataset, as with an env (not a path)
            dataset = None
        if dataset is not None and getattr(algo_cls, "family", None) != "offline":  # (not read: ppo takes none)
            raise online_dataset_error(algo_name)
        if isinstance(dataset, (str, Path)):  # its JSON metadata (the arrays are not read)
            from canter.data.dataset import read_dataset_metadata

            env_id = str(read_dataset_metadata(dataset).get("env"))
    if not env_id:  # an rl-zoo3 file names its env as a section: say so (adding --env met that error next)
        raise next(filter(None, (zoo_section(k, v, str(config_file)) for k, v in file_data.items() if isinstance(
            k, str))), None) or CanterError("no environment given; pass --env ENV_ID (e.g. --env CartPole-v1; in "
                                            "Python canter.train('ppo', 'CartPole-v1') or env='CartPole-v1')")
    if not isinstance(env_id, (str, list, dict, tuple, int, float)) and env_id is not None:  # an env, class, factory
        from canter.config_errors import env_object_error

        raise env_object_error(env_id)
    if not isinstance(env_id, str) or not env_id.isprintable():
        raise CanterError(f"'env' must be an environment id string, got {env_id!r}")
    layers = preset_layers(algo_name, env_id)
    n_presets = len(layers)
    if file_data:
        layers.append((str(config_file), file_data))
    overrides = dict(run_overrides)
    if hparams:
        overrides["hparams"] = dict(hparams)
    layers.append(("arguments", overrides))
    layers.append(("--set", sets_dict))

    run_keys, hp_keys = fields_of(RunConfig), fields_of(algo_cls.Config)
    run_values: dict[str, Any] = {}
    hp_values: dict[str, Any] = {}
    preset_keys: set[str] = set()  # the run keys whose value is a shipped preset's
    python_run: set[str] = set()  # the run keys, and hyperparameters, whose value is a Python argument's
    python_hp: set[str] = set()
    for layer, (_source, data) in enumerate(layers):
        python_layer = from_python and _source == "arguments"
        given: dict[str, str] = {}  # hyperparameter -> the key that set it in this layer

        def set_hp(name: str, value: Any, key: str) -> None:
            # one layer naming a hyperparameter twice ('lr: 0.1' and 'hparams: {lr: 0.2}' in one file) would keep
            # whichever comes last, as a repeated YAML key would; a repeated --set is the documented exception
            for name, value in sb3_net_arch(algo_cls.Config, name, value, f"hparams.{name}"):  # dict(pi=, vf=)
                if name in given and _source != "--set":
                    raise CanterError(f"'{given[name]}' and '{key}' both set 'hparams.{name}' in {_source}; give it "
                                      f"once")
                given[name] = key
                hp_values[name] = value
                (python_hp.add if python_layer else python_hp.discard)(name)

        wholes: dict[str, Any] = {}  # mapping run key -> its value as this layer gives it whole
        policy_given: set[str] = set()  # the policies whose critic_net_arch this layer set
        for key, value in entries_last(data, run_keys, _source != "--set"):  # env_kwargs: {...}, then env_kwargs.x
            if not isinstance(key, str):
                raise CanterError(f"config keys must be strings, got {key!r} in {_source}")
            policies_before = run_values.get("policy_hparams")
            if key == "hparams":
                if isinstance(value, str):  # --set 'hparams={lr: 0.001}'
                    value = parse_yaml_value(value, key)
                value = left_empty(dict, value, _source)  # a file's 'hparams:' left empty
                if not isinstance(value, dict):
                    raise CanterError(f"'hparams' must be a mapping of hyperparameter names to values{glued_word(value)}"
                                      f"{dashed_pairs(value)}")
                for k, v in value.items():
                    if k not in hp_keys:
                        raise _unknown_hparam(f"hparams.{k}", hp_keys, run_keys, algo_name)
                    set_hp(k, v, f"hparams: {{{k}: ...}}")
            elif key.startswith("hparams."):
                if key[8:] not in hp_keys:
                    raise _unknown_hparam(key, hp_keys, run_keys, algo_name)
                set_hp(key[8:], value, key)
            elif key in run_keys:  # a file's 'env_kwargs:' left empty is {}, 'callbacks:' []
                run_values[key] = wholes[key] = left_empty(run_keys[key][1], value, _source)
                (python_run.add if python_layer else python_run.discard)(key)
                if layer < n_presets:
                    preset_keys.add(key)
                else:
                    preset_keys.discard(key)
            elif key in hp_keys:
                set_hp(key, value, key)
            elif key.split(".", 1)[0] in run_keys:  # env_kwargs.max_episode_steps: an entry of a mapping setting
                head = key.split(".", 1)[0]
                check_entry_once(wholes, key, _source)
                run_values[head] = set_nested(run_keys, run_values, key, value,
                                              text=_source == "--set" and key not in parsed_sets)
                (preset_keys.add if layer < n_presets else preset_keys.discard)(head)
            else:
                keys = ["hparams", *run_keys, *hp_keys]  # hparam: {lr: ...} was "did you mean 'policy_hparams'?"
                raise zoo_section(key, value, _source) or _other_name(key, run_keys, hp_keys, algo_name) or _another_algorithms(
                    key, keys, algo_name) or misspelt_section(key, run_keys, hp_keys) or unknown(
                    "config key", key, keys, see=_keys_hint(algo_name))
            if key.split(".", 1)[0] == "policy_hparams":  # an SB3 net_arch mapping read now, over the layers below
                run_values["policy_hparams"] = split_policy_net_arch(run_values["policy_hparams"], policies_before,
                                                                     algo_name, _source, policy_given)
    run_values["algo"] = algo_name
    run_values["env"] = str(env_id)
    if "target_reward" in preset_keys and (_no_evaluations(run_values.get("eval_episodes")) or _final_eval_only(
            run_values.get("eval_every"), run_values.get("max_steps"))):
        # a preset's target, which no evaluation would check (or none before a long run's end, refused in validate
        # for a target the user gives: --eval-every 0 --max-steps 2e7 was refused for CartPole's preset 475): none
        run_values.pop("target_reward")
    run = build(RunConfig, check_empty_strings(run_values), from_python=python_run)  # '' was '.' as init_from, ...
    note_preset_target(run, run_values, preset_keys)  # warned once the run is built
    if run.target_reward is not None and run.eval_every == 0 and run.max_steps > 10_000_000:
        # a new run's only: a resume cannot drop the target or change eval_every, and its --max-steps was refused
        raise CanterError(f"'target_reward' ({run.target_reward:g}, which the env's shipped preset may set) is only "
                          f"checked at evaluations; set 'eval_every' > 0 for long runs, or drop it (--set "
                          f"target_reward=null)")
    run.imports = [m.strip() for m in run.imports]  # imported stripped (config_imports): recorded so, eval finds them
    algo_cfg = build(algo_cls.Config, hp_values, section="hparams.", from_python=python_hp)
    from canter.multiagent_config import policy_config, recorded_policy_algos, resolve_multiagent_modes

    resolve_multiagent_modes(run, algo_cls, algo_cfg)
    for policy in run.policy_hparams:  # every key and value checked now; the policy names once the env is made
        policy_config(run, algo_cfg, policy)
    run.policy_hparams = recorded_policy_algos(run)
    if getattr(algo_cfg, "normalize_value", False) and run.explorers:
        raise CanterError("normalize_value keeps its return statistics in the learner, which explorers do not get; "
                          "set hparams.normalize_value=false or drop --explorers")
    if run.explorers and getattr(algo_cfg, "train_freq_unit", "step") == "episode":
        raise CanterError("train_freq_unit: episode counts the episodes of one process's envs, but explorers collect "
                          "train_freq env steps per rollout; use train_freq_unit: step with --explorers")
    if run.n_envs is None:
        run.n_envs = algo_cls.default_n_envs
    if run.explorers * run.n_envs > MAX_ENVS:  # the learner keeps per-env statistics of every explorer's envs
        raise CanterError(f"{run.explorers:,} explorers x n_envs {run.n_envs:,} = {run.explorers * run.n_envs:,} envs, "
                          f"more than the {MAX_ENVS:,} one run holds; at most {MAX_ENVS // run.n_envs:,} explorers "
                          f"with n_envs {run.n_envs:,}")
    if algo_cls.family != "offline" and isinstance(run.dataset, str) and not run.dataset.strip():  # was taken as none
        raise online_dataset_error(algo_name)
    if run.dataset and run.dataset.strip() and not run.dataset.startswith("minari:"):
        run.dataset = str(Path(run.dataset).absolute())  # the run records where it is: --resume from anywhere
    if run.init_from and run.init_from.strip():  # config.yaml given back with -f from another directory
        run.init_from = str(Path(run.init_from).expanduser().absolute())
    for key in ("env_kwargs", "eval_env_kwargs"):  # eval, play and --resume from anywhere
        kwargs = getattr(run, key)
        if run.env.startswith("pettingzoo:") and isinstance(kwargs, dict):
            from canter.envs.turns import absolute_opponents, refuse_snapshots_key

            refuse_snapshots_key(run.env, key, kwargs)  # canter's own key, never recorded (canter.envs.opponents)
            setattr(run, key, absolute_opponents(run.env, kwargs))
    if run.dataset and run.dataset.strip() and algo_cls.family == "offline":
        from canter.data.dataset import read_dataset_metadata
        from canter.registry import import_user_modules

        meta = read_dataset_metadata(run.dataset)  # an offline run evaluates on the env the data came from
        from canter.envs.make import same_env_id

        if same_env_id(str(meta.get("env")), run.env) and meta.get("env_kwargs") and not run.env_kwargs:
            run.env_kwargs = dict(meta["env_kwargs"])
        modules = meta.get("user_modules") or []  # they register its env by name: imported, and recorded with the run
        import_user_modules(modules, f"dataset {run.dataset}", made="collected")
        run.imports = [*run.imports, *(m for m in modules if m not in run.imports)]
    return run, algo_cfg


def _no_evaluations(eval_episodes: Any) -> bool:
    """Whether an ``eval_episodes`` value as given (``0``, ``--set``'s ``'0'``) switches evaluation off."""
    try:
        return eval_episodes is not None and coerce(int, eval_episodes, "eval_episodes") == 0
    except CanterError:  # refused when the config is built, naming it
        return False


def _final_eval_only(eval_every: Any, max_steps: Any) -> bool:
    """Whether ``eval_every`` and ``max_steps`` as given make a long run evaluated only at its end (``eval_every: 0``,
    ``max_steps`` over 1e7), where :meth:`RunConfig.validate` refuses a ``target_reward``."""
    try:
        return (eval_every is not None and coerce(int, eval_every, "eval_every") == 0 and max_steps is not None
                and coerce(int, max_steps, "max_steps") > 10_000_000)
    except CanterError:  # refused when the config is built, naming it
        return False


def resolved_dict(run: RunConfig, algo_cfg: Any) -> dict[str, Any]:
    """The fully resolved config as plain data (written to ``config.yaml``)."""
    return {**to_dict(run), "hparams": to_dict(algo_cfg)}
