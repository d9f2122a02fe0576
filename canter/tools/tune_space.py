"""The search space of ``canter tune``: each hyperparameter's range comes from its config field
(``hp(..., search=...)``), ``--space FILE.yaml`` overrides entries by name, and a resumed study's
sampled distributions must stay compatible (:func:`check_study_space`)."""
from __future__ import annotations

import json
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from canter.config import RunConfig, _keys_hint, check_range, coerce, fields_of
from canter.yaml_io import load_yaml
from canter.config_errors import other_owners
from canter.errors import CanterError, closest, unknown
from canter.registry import lookup

SPEC_KEYS = ("low", "high", "log", "step", "choices")


@dataclass(frozen=True)
class Param:
    """One dimension of the search space."""

    name: str
    kind: str  # "int", "float" or "categorical"
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: tuple[Any, ...] = ()

    @property
    def encoded(self) -> bool:
        """Whether the choices are sampled as JSON text (lists such as net_arch are not Optuna categories)."""
        return not all(c is None or isinstance(c, (bool, int, float, str)) for c in self.choices)

    def distribution(self) -> Any:
        """The Optuna distribution that :meth:`suggest` draws from (and that the study stores)."""
        from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

        if self.kind == "int":
            return IntDistribution(int(self.low), int(self.high), log=self.log, step=int(self.step or 1))
        if self.kind == "float":
            return FloatDistribution(self.low, self.high, log=self.log, step=self.step)
        return CategoricalDistribution([json.dumps(c) for c in self.choices] if self.encoded else list(self.choices))

    def suggest(self, trial: Any) -> Any:
        """Draw this parameter from an Optuna trial."""
        d = self.distribution()
        if self.kind == "int":
            return trial.suggest_int(self.name, d.low, d.high, step=d.step, log=d.log)
        if self.kind == "float":
            return trial.suggest_float(self.name, d.low, d.high, step=d.step, log=d.log)
        value = trial.suggest_categorical(self.name, list(d.choices))
        return json.loads(value) if self.encoded else value


def describe(distribution: Any) -> str:
    """An Optuna distribution in a few words, e.g. ``a log-scale float range [1e-05, 0.003]``."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    if isinstance(distribution, CategoricalDistribution):
        choices = dict(enumerate(distribution.choices))
        return f"choices {list(_decode(choices, dict.fromkeys(choices, distribution)).values())}"
    kind = "int" if isinstance(distribution, IntDistribution) else "float"
    scale = "log-scale " if distribution.log else ""
    return f"a {scale}{kind} range [{distribution.low:g}, {distribution.high:g}]"


def check_study_space(study: Any, space: dict[str, Param]) -> None:
    """Refuse (CanterError) a search space that the study's earlier trials cannot be continued with.

    Optuna refuses to sample a parameter from a distribution of another kind (int, float, categorical),
    another scale (log or not) or other choices than earlier trials did; it would fail every new trial.
    A range (low, high, step) may change.
    """
    from optuna.distributions import check_distribution_compatibility

    stored: dict[str, Any] = {}
    for trial in study.get_trials(deepcopy=False):
        for name, distribution in trial.distributions.items():
            stored.setdefault(name, distribution)
    for name, param in space.items():
        if name not in stored:
            continue
        try:
            check_distribution_compatibility(stored[name], param.distribution())
        except ValueError:
            raise CanterError(
                f"study '{study.study_name}' sampled '{name}' from {describe(stored[name])}, but the search space "
                f"now gives {describe(param.distribution())}; keep its kind, log scale and choices, or start a "
                "new study with another --study name or --out") from None


def _field(algo_cls: type, name: str) -> tuple[str, Any, Any]:
    """(config key, dataclass field, type) for a hyperparameter or run-config key."""
    hp_fields, run_fields = fields_of(algo_cls.Config), fields_of(RunConfig)
    bare = name[8:] if name.startswith("hparams.") else name
    if bare in hp_fields:
        return bare, *hp_fields[bare]
    if not name.startswith("hparams.") and name in run_fields and name not in ("algo", "env"):
        return name, *run_fields[name]
    # 'canter list' shows registered names, not config keys: the hint says where they are
    keys, algo = list(hp_fields) + [k for k in run_fields if k not in ("algo", "env")], getattr(algo_cls, "name", "ALGO")
    owners = other_owners(bare, algo)  # tau for ppo: SAC's, TD3's, ... (a space written for another algorithm)
    if owners is not None:
        near = closest(bare, keys)
        hint = ("did you mean " + " or ".join(f"'{k}'" for k in near) + "?") if near else _keys_hint(algo)
        raise CanterError(f"unknown hyperparameter in the search space '{name}': {owners} (a search space written for "
                          f"another algorithm?); {hint}")
    raise unknown("hyperparameter in the search space", name, keys, see=_keys_hint(algo))


def typing_inner(tp: Any) -> Any:
    """``int | None`` -> ``int``; other types unchanged (``list[int]`` stays ``list[int]``)."""
    if typing.get_origin(tp) not in (typing.Union, types.UnionType):
        return tp
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return args[0] if len(args) == 1 else tp


def make_param(algo_cls: type, name: str, spec: Any, source: str) -> Param:
    """Validate one search-space entry against its config field and build a :class:`Param`."""
    key, f, tp = _field(algo_cls, name)
    where = f"search space of '{name}' ({source})"
    if not isinstance(spec, dict):
        raise CanterError(f"{where} must be a mapping with 'choices' or 'low'/'high', got {spec!r}")
    for k in spec:
        if k not in SPEC_KEYS:
            raise unknown(f"key in the {where}", str(k), SPEC_KEYS)
    if "choices" in spec:
        mixed = [k for k in spec if k != "choices"]
        if mixed:  # either would be dropped without a word: the range, or the choices
            raise CanterError(f"{where}: 'choices' cannot be combined with '{mixed[0]}'; give either 'choices' or a "
                              "range ('low', 'high' and optionally 'log' or 'step')")
        choices = spec["choices"]
        if not isinstance(choices, list) or not choices:
            raise CanterError(f"{where}: 'choices' must be a non-empty list")
        values = [coerce(tp, c, key) for c in choices]
        for v in values:
            check_range(f, v, key)
        seen: dict[str, Any] = {}
        for c, v in zip(choices, values):  # Optuna would draw the one value twice as often, as two choices
            text = json.dumps(v, sort_keys=True, default=str)
            if text in seen:
                raise CanterError(f"{where}: the choice {v!r} is given twice ({seen[text]!r} and {c!r}); list each "
                                  "value once")
            seen[text] = c
        return Param(key, "categorical", choices=tuple(values))
    if "low" not in spec or "high" not in spec:
        raise CanterError(f"{where} needs 'choices' or both 'low' and 'high'")
    base = tp if tp in (int, float) else typing_inner(tp)
    if base not in (int, float):
        raise CanterError(f"{where}: '{key}' is not a number; give 'choices' instead of a range")
    low, high = coerce(base, spec["low"], key), coerce(base, spec["high"], key)
    check_range(f, low, key)
    check_range(f, high, key)
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise CanterError(f"{where}: 'log' must be true or false, got {log!r}")
    if not low < high:
        raise CanterError(f"{where}: 'low' ({low}) must be below 'high' ({high})")
    if log and low <= 0:
        raise CanterError(f"{where}: a log scale needs 'low' > 0, got {low}")
    step = spec.get("step")
    if step is not None and log:
        raise CanterError(f"{where}: 'step' and 'log' cannot be combined")
    if step is not None:
        step = coerce(base, step, f"{key}: step")
        if not step > 0:
            raise CanterError(f"{where}: 'step' must be > 0, got {step}")
        _check_grid(where, low, high, step)
    return Param(key, "int" if base is int else "float", low, high, log, step)


def _check_grid(where: str, low: float, high: float, step: float) -> None:
    """Refuse (CanterError) a ``step`` that does not divide ``high - low``: Optuna would lower ``high`` to the grid's
    last point with a warning (``low: 16, high: 64, step: 100`` tuned nothing, every trial 16)."""
    from decimal import Decimal

    d_low, d_high, d_step = Decimal(str(low)), Decimal(str(high)), Decimal(str(step))  # as Optuna checks it
    span = d_high - d_low
    if span % d_step == 0:
        return
    below = (span // d_step) * d_step + d_low
    above, num = below + d_step, type(low)
    hint = (f"use 'high': {num(below)} or {num(above)}" if below > d_low
            else f"use 'high': {num(above)} or a 'step' of at most {num(span)}")
    raise CanterError(f"{where}: 'step' ({step}) does not divide the range from 'low' ({low}) to 'high' ({high}), which "
                      f"Optuna would cut to [{low}, {num(below)}]; {hint}")


def search_space(algo: str, space_file: str | Path | None = None) -> dict[str, Param]:
    """The declared search space of ``algo``'s config, with ``space_file``'s entries over it."""
    algo_cls = lookup("algorithm", algo)
    specs: dict[str, tuple[Any, str]] = {}
    for name, (f, _tp) in fields_of(algo_cls.Config).items():
        if f.metadata.get("search"):
            specs[name] = (f.metadata["search"], f"declared on {algo_cls.__name__}.Config")
    if space_file is not None:
        named: dict[str, str] = {}  # config key -> the entry that named it
        for name, spec in load_yaml(space_file, "--space file").items():
            key = _field(algo_cls, str(name))[0]
            if key in named:  # 'lr' and 'hparams.lr': the later one was kept without a word
                raise CanterError(f"'{named[key]}' and '{name}' both name '{key}' in --space {space_file}; give it "
                                  "once")
            named[key] = str(name)
            if spec is None:
                specs.pop(key, None)
            else:
                specs[key] = (spec, str(space_file))
    if not specs:
        raise CanterError(f"the search space of '{algo}' is empty; declare search= on its config fields or pass --space")
    return {name: make_param(algo_cls, name, spec, source) for name, (spec, source) in specs.items()}


def check_space_run_keys(space: dict[str, Param], source: str = "--space") -> None:
    """Refuse (CanterError) a search space that samples a run setting which ``canter tune`` refuses as a flag: an
    ``eval_episodes`` of 0 (a trial's value is its last evaluation), or ``record_every`` / ``wandb`` on (trials write
    no run directory). Each such trial would fail, one after the other, instead of one line before the study."""
    for name, param in space.items():
        values = list(param.choices) if param.kind == "categorical" else [param.low, param.high]
        if name == "eval_episodes" and any(v == 0 for v in values):
            raise CanterError(f"tune scores each trial by its evaluations, but {source} samples 'eval_episodes' 0, "
                              "which runs none; sample it from values >= 1")
        if name in ("record_every", "wandb") and any(values):
            raise CanterError(f"'{name}' applies to a run directory, which tune's trials do not write; drop it from "
                              f"{source} (train the best config with canter train to record it)")


def _encoded(distribution: Any) -> bool:
    """Whether a stored Optuna distribution is a categorical whose choices :class:`Param` sampled as JSON text (one of
    them at least a list or mapping, such as net_arch's)."""
    choices = getattr(distribution, "choices", None)
    if not choices or not all(isinstance(c, str) for c in choices):
        return False
    try:
        values = [json.loads(c) for c in choices]
    except json.JSONDecodeError:
        return False
    return any(isinstance(v, (list, dict)) for v in values)


def _decode(params: dict[str, Any], distributions: dict[str, Any] | None = None) -> dict[str, Any]:
    """Turn JSON-encoded choices back into values: with the trial's ``distributions``, every choice of an encoded
    categorical (``null`` of ``critic_net_arch: {choices: [null, [256, 256]]}`` is None, not the text 'null');
    without them, the texts that look like a list or mapping."""
    out = {}
    for k, v in params.items():
        if distributions is not None and k in distributions:
            if _encoded(distributions[k]) and isinstance(v, str):
                v = json.loads(v)
        elif isinstance(v, str) and v[:1] in "[{":
            try:
                v = json.loads(v)
            except json.JSONDecodeError:
                pass
        out[k] = v
    return out


def trial_seed(seed: int, number: int) -> int:
    """The TPE seed of trial ``number`` of a study tuned with ``--sampler-seed seed``."""
    import numpy as np

    return int(np.random.SeedSequence([seed, number]).generate_state(1)[0])


class TrialSeededSampler:
    """Optuna's TPE sampler, seeded again before each trial from ``seed`` and the trial's number.

    The storage numbers a study's trials, one number per trial whichever process asks for it, so each trial draws
    its own values: processes that start on one study at once (several machines on a shared ``--storage``, or
    ``--jobs`` workers) do not sample the same parameters, a resumed study does not repeat its first trials, and
    one process reproduces its study from the seed. ``seed`` None: Optuna's unseeded TPE."""

    def __init__(self, seed: int | None) -> None:
        from optuna.samplers import TPESampler

        self.seed, self.inner = seed, TPESampler(seed=seed)

    def before_trial(self, study: Any, trial: Any) -> None:
        """Seed a new TPE sampler for ``trial`` (its history is the study's, so nothing is lost)."""
        from optuna.samplers import TPESampler

        if self.seed is not None:
            self.inner = TPESampler(seed=trial_seed(self.seed, trial.number))
        self.inner.before_trial(study, trial)

    def infer_relative_search_space(self, study: Any, trial: Any) -> Any:
        """TPE's."""
        return self.inner.infer_relative_search_space(study, trial)

    def sample_relative(self, study: Any, trial: Any, search_space: Any) -> Any:
        """TPE's."""
        return self.inner.sample_relative(study, trial, search_space)

    def sample_independent(self, study: Any, trial: Any, param_name: str, param_distribution: Any) -> Any:
        """TPE's."""
        return self.inner.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study: Any, trial: Any, state: Any, values: Any) -> None:
        """TPE's."""
        self.inner.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        """TPE's (Optuna calls it for samplers shared by threads)."""
        self.inner.reseed_rng()


def rollout_rows(run: Any, algo_cfg: Any) -> int | None:
    """The transitions of one update's rollout (``n_steps x n_envs``; with explorers, a synchronous algorithm's
    learns from every explorer's at once) of an algorithm that takes minibatches of it, when the config alone
    tells it (a single-agent env); else None."""
    from canter.envs.multiagent import is_multiagent

    n_steps = getattr(algo_cfg, "n_steps", None)
    if not isinstance(n_steps, int) or is_multiagent(run.env):
        return None
    return n_steps * run.n_envs * _rollouts_per_update(run)


def _rollouts_per_update(run: Any) -> int:
    """The explorer rollouts one update learns from: all of them for a synchronous algorithm (the on_policy family:
    PPO, A2C, TRPO, NPG, REINFORCE, MAPPO with ``--explorers``), one for an asynchronous one (IMPALA, APPO) or a run
    in one process."""
    if not run.explorers:
        return 1
    return 1 if getattr(lookup("algorithm", run.algo), "family", None) == "async" else run.explorers


def step_rows(run: Any) -> int:
    """The rows the run's env steps at once, each an env step of its budget: ``n_envs``, or for a multi-agent
    (``pettingzoo:``) env ``n_envs`` x the rows of one copy (every agent's, one with ``policies: joint``), counted
    on one copy made for it."""
    from canter.envs.multiagent import is_multiagent

    if not is_multiagent(run.env):
        return run.n_envs
    return run.n_envs * _copy_rows(run.env, json.dumps(run.env_kwargs, sort_keys=True, default=str), run.policies,
                                   run.env_kwargs)


_COPY_ROWS: dict[tuple[str, str, str], int] = {}


def _copy_rows(env_id: str, key: str, policies: str, env_kwargs: dict[str, Any]) -> int:
    """The rows one copy of the multi-agent env ``env_id`` steps (made once per env, kwargs and policies)."""
    if (env_id, key, policies) not in _COPY_ROWS:
        from canter.envs.make import make_vec_env

        env = make_vec_env(env_id, 1, env_kwargs=env_kwargs, policies=policies)
        try:
            _COPY_ROWS[env_id, key, policies] = int(env.num_envs)
        finally:
            env.close()
    return _COPY_ROWS[env_id, key, policies]


def fit_params(params: dict[str, Any], run: Any, algo_cfg: Any) -> dict[str, Any]:
    """A trial's sampled ``params`` made to fit each other and the trial's budget: a rollout larger than
    ``max_steps`` is lowered to fit it (``n_steps``: ``max_steps // n_envs``, at least 1; a multi-agent env's
    ``n_envs`` x agent rows per copy, :func:`step_rows`; with explorers, a synchronous algorithm's ``n_envs`` x
    explorers, an asynchronous one's (IMPALA, APPO) one explorer's ``n_envs``), a minibatch larger than
    the rollout is the whole rollout (``batch_size``, as rl-zoo3's samplers make it), and an off-policy phase takes
    at most one gradient step per env step it collected (``gradient_steps`` at most ``train_freq`` env steps:
    sampled independently, train_freq 1 with gradient_steps 64 made one DQN trial take 3.5 of a study's 4
    minutes for 3,000 steps)."""
    fitted = dict(params)
    rows = rollout_rows(run, algo_cfg)
    budget = getattr(run, "max_steps", None)
    if (isinstance(fitted.get("n_steps"), int) and isinstance(getattr(algo_cfg, "n_steps", None), int)
            and isinstance(budget, int)):
        # the budget is checked between rollouts: n_steps 2048 x 16 envs trained a --max-steps 1024 trial for
        # 32,768 steps, and its evaluation was compared with the others' after 32x their steps (a multi-agent
        # env's rollout is n_steps x every agent row of its copies; with explorers, an asynchronous algorithm's
        # rollout is one explorer's n_steps x n_envs, a synchronous one's every explorer's: impala --explorers 2
        # with n_steps 128 x 8 envs trained a --max-steps 200 trial for 1,024 steps)
        per_step = step_rows(run) * _rollouts_per_update(run)
        if algo_cfg.n_steps * per_step > budget:
            fitted["n_steps"] = max(1, budget // per_step)
            rows = None if rows is None else fitted["n_steps"] * run.n_envs * _rollouts_per_update(run)
    if isinstance(fitted.get("batch_size"), int) and rows and fitted["batch_size"] > rows:
        fitted["batch_size"] = rows
    freq, steps = fitted.get("train_freq"), fitted.get("gradient_steps")
    if (isinstance(freq, int) and isinstance(steps, int) and steps > freq
            and getattr(algo_cfg, "train_freq_unit", "step") == "step"):
        fitted["gradient_steps"] = freq
    return fitted


def check_space_policy_hparams(space: dict[str, Param], run: Any) -> None:
    """Refuse (CanterError) a hyperparameter of the search space that no policy of a multi-policy run
    (``policies: type | agent``) trains with: each policy fixes it in its ``policy_hparams`` entry, or trains with
    another algorithm or not at all (``algo: random``; a ``frozen`` policy only for one of
    :data:`~canter.multiagent_config.TRAINING_ONLY`: it still acts with the others, as TD3's ``noise_std``). The
    sampled value applied to none of them (a study tuning ``lr`` under ``policy_hparams`` giving every policy its own
    ``lr`` compared trials that differed in nothing), as a parameter both tuned and fixed by ``--set`` would."""
    from canter.multiagent_config import TRAINING_ONLY, fixed_policy, policy_algo

    if run.policies not in ("type", "agent") or not run.policy_hparams:
        return
    from canter.envs.make import make_vec_env

    env = make_vec_env(run.env, 1, env_kwargs=run.env_kwargs, policies=run.policies)
    try:
        policies = list(env.single_observation_space.spaces)
    finally:
        env.close()
    run_fields = fields_of(RunConfig)
    for name in space:
        if name in run_fields:  # a run setting: shared by every policy
            continue
        # a frozen policy never updates, but acts with the rest (its exploration noise): as frozen_ignored says
        takes = (None,) if name in TRAINING_ONLY else (None, "frozen")
        owners = [p for p in policies if not (isinstance(run.policy_hparams.get(p), dict)
                                              and name in run.policy_hparams[p]) and policy_algo(run, p) == run.algo
                  and fixed_policy(run, p) in takes]
        if not owners:
            raise CanterError(f"'{name}' is tuned, but policy_hparams fixes it for every policy ({', '.join(policies)}) "
                              f"or trains them with another algorithm or not at all (algo: random, frozen): the "
                              f"sampled value would apply to none of them; drop it from policy_hparams for one "
                              f"policy, or set it to null in --space")
