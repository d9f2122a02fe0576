"""Multi-agent run options: what ``policies``, ``policy_hparams`` and ``central_state`` allow, what the
algorithm sets, and each policy's own config (:func:`policy_config`).

QMIX (``joint_agents``) runs with ``policies: joint`` and MAPPO (``central_critic``) with
``central_state``; both are set here while the config is resolved (:func:`canter.config.resolve_config`).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from canter.agents.fixed import RANDOM
from canter.envs.multiagent import PREFIX, is_multiagent
from canter.errors import CanterError

if TYPE_CHECKING:
    from canter.config import RunConfig


def check_multiagent_run(run: RunConfig) -> None:
    """The run options' own multi-agent checks (``policies``, ``central_state``); part of
    :meth:`RunConfig.validate <canter.config.RunConfig.validate>`."""
    if run.policies != "shared":
        if not is_multiagent(run.env):
            raise CanterError(f"'policies: {run.policies}' is for multi-agent envs ({PREFIX}MODULE); "
                              f"{run.env} has one agent")
        if run.explorers or run.dataset is not None:
            raise CanterError(f"'policies: {run.policies}' trains in one process, on the env; it takes no "
                              f"{'explorers' if run.explorers else 'dataset'} (use policies: shared)")
    if run.policy_hparams and run.policies not in ("type", "agent"):
        raise CanterError("'policy_hparams' sets hyperparameters of single policies: it needs policies: type or agent")
    if run.central_state:
        if not is_multiagent(run.env):
            raise CanterError(f"'central_state' is for multi-agent envs ({PREFIX}MODULE); {run.env} has one agent")
        if run.policies == "joint":
            raise CanterError("'central_state' is for actor-critic algorithms; a joint run already sees the state")


def resolve_multiagent_modes(run: RunConfig, algo_cls: Any, algo_cfg: Any) -> None:
    """Algorithms that act for all of a multi-agent env's agents at once (``joint_agents``: QMIX)
    run with ``policies: joint``, and those with a centralised critic (``central_critic``: MAPPO)
    with ``central_state``, set here; other algorithms cannot use ``joint``, and a central state
    needs the ``split`` encoder (else the actor would see the global state too)."""
    if getattr(algo_cls, "central_critic", False):
        if not is_multiagent(run.env):
            raise CanterError(f"{run.algo} trains multi-agent envs ({PREFIX}MODULE), whose global state its critic "
                              f"sees; {run.env} has one agent (use ppo)")
        from canter.envs.turns import is_turn_based

        if is_turn_based(run.env):
            raise CanterError(f"{run.algo}'s critic sees the global state of a parallel multi-agent env; "
                              f"'{run.env}' is a turn-based game (train ppo: one policy learns a seat)")
        run.central_state = True
    if run.central_state:
        from canter.algorithms.actor_critic import ActorCriticAlgorithm

        if not issubclass(algo_cls, ActorCriticAlgorithm) or not hasattr(algo_cfg, "encoder"):
            raise CanterError(f"'central_state' is for actor-critic algorithms with an encoder option (mappo, ppo), "
                              f"not {run.algo}")
        if algo_cls.family == "on_policy_recurrent":
            raise CanterError(f"{run.algo} has no centralised critic (its recurrent actor and critic share one "
                              f"input); drop central_state, or train mappo")
        if algo_cfg.encoder != "split":
            raise CanterError("'central_state' gives actor and critic inputs of their own: set hparams.encoder=split "
                              "(or train mappo)")
    if algo_cls.family == "on_policy_recurrent" and run.policies in ("type", "agent"):
        raise CanterError(f"{run.algo} trains one shared policy on multi-agent envs; leave 'policies' out")
    joint = getattr(algo_cls, "joint_agents", False)
    if run.policies == "joint" and not joint:
        raise CanterError(f"'policies: joint' is for algorithms that act for all agents at once (qmix), not {run.algo}")
    if joint and run.policies in ("type", "agent"):
        raise CanterError(f"{run.algo} controls every agent jointly; leave 'policies' out (it runs with policies: joint)")
    if joint and run.explorers:
        raise CanterError(f"{run.algo} runs in one process; drop --explorers")
    if joint and is_multiagent(run.env):
        from canter.envs.turns import is_turn_based

        if is_turn_based(run.env):  # else the turn-based env refuses the 'policies: joint' set here, not by the user
            raise CanterError(f"{run.algo} controls the agents of a parallel multi-agent env jointly; '{run.env}' is a "
                              f"turn-based game (train dqn or ppo: one policy learns a seat)")
        run.policies = "joint"


def policy_config(run: RunConfig, algo_cfg: Any, policy: str) -> Any:
    """The algorithm config of one policy of a multi-policy run: ``algo_cfg`` with the policy's
    ``policy_hparams`` entries over it (validated like ``hparams``)."""
    from canter.config import build, to_dict

    overrides = run.policy_hparams.get(policy)
    if not overrides:
        return algo_cfg
    if not isinstance(overrides, dict):
        raise CanterError(f"'policy_hparams.{policy}' must be a mapping of hyperparameter names to values")
    algo_name = policy_algo(run, policy)
    if fixed_policy(run, policy) == RANDOM:
        return None
    overrides = {k: v for k, v in overrides.items() if k not in ("algo", "frozen")}
    if algo_name != run.algo:  # a policy of its own algorithm: that algorithm's defaults, not the run's hparams
        algo_cfg = build(policy_algorithm_class(run, policy).Config, {}, section=f"policy_hparams.{policy}.")
    from canter.config import RunConfig as Run, fields_of

    hp_keys = fields_of(type(algo_cfg))
    for key in overrides:  # a run key here ('n_envs'): said as hparams says it, not 'did you mean n_epochs'
        if key in fields_of(Run) and key not in hp_keys:
            raise CanterError(f"'policy_hparams.{policy}.{key}' is a run setting, shared by every policy, not a "
                              f"hyperparameter: give it at the top level ('{key}: ...' in YAML, --set {key}=...)")
        if isinstance(key, str) and key not in hp_keys:  # tau for ppo: the algorithms that have it, as hparams.tau
            from canter.config_errors import _another_algorithms, _other_name

            full = f"policy_hparams.{policy}.{key}"  # learning_rate: 'lr', as hparams.learning_rate (was clip_range)
            error = _other_name(full, fields_of(Run), hp_keys, algo_name) or _another_algorithms(
                full, [f"policy_hparams.{policy}.{k}" for k in hp_keys], algo_name)
            if error is not None:
                raise error
    from canter.config import sb3_net_arch

    given = [pair for k, v in overrides.items()
             for pair in sb3_net_arch(type(algo_cfg), k, v, f"policy_hparams.{policy}.{k}")]  # dict(pi=, vf=)
    values = {**to_dict(algo_cfg), **dict(given)}
    cfg = build(type(algo_cfg), values, section=f"policy_hparams.{policy}.")
    if run.central_state and getattr(cfg, "encoder", "split") != "split":  # as resolve_multiagent_modes for hparams
        raise CanterError(f"'central_state' gives actor and critic inputs of their own: "
                          f"policy_hparams.{policy}.encoder must be split, not {cfg.encoder} (its actor would see "
                          f"the global state)")
    return cfg


def check_saved_policy_hparams(run: RunConfig, where: str) -> None:
    """Refuse in one line a ``policy_hparams`` entry of ``where`` (``checkpoint PATH``, loaded or resumed) that its
    policy's algorithm no longer has (renamed in a user's algorithm since), as :func:`canter.config.build_saved_hparams`
    does ``hparams``'s: :func:`policy_config` would call it an unknown key of the command's, with another algorithm's
    near names."""
    from canter.config import fields_of, saved_hparam_gone

    for policy, own in (run.policy_hparams or {}).items():
        if not isinstance(own, dict) or fixed_policy(run, policy) == RANDOM:
            continue
        cls = policy_algorithm_class(run, policy).Config
        gone = [k for k in own if isinstance(k, str) and k not in ("algo", "frozen") and k not in fields_of(cls)]
        if gone:
            raise saved_hparam_gone(cls, gone[0], where, f"policy_hparams.{policy}.")


def fixed_policy(run: RunConfig, policy: str) -> str | None:
    """How ``policy`` of a multi-policy run is held fixed: ``random`` (``algo: random``: uniform random actions),
    ``frozen`` (``frozen: true``: the weights ``init_from`` loads, never trained), or None (it learns). Bad values
    are one-line errors."""
    own = run.policy_hparams.get(policy)
    if not isinstance(own, dict):
        return None
    frozen = own.get("frozen", False)
    if not isinstance(frozen, bool):
        raise CanterError(f"'policy_hparams.{policy}.frozen' is true or false, got {frozen!r}")
    if policy_algo(run, policy) == RANDOM:
        extra = sorted(str(k) for k in own if k != "algo")
        if extra:
            raise CanterError(f"'policy_hparams.{policy}.algo: random' acts uniformly at random and takes no "
                              f"hyperparameters; drop {', '.join(extra)}")
        return RANDOM
    if not frozen:
        return None
    if not run.init_from:
        raise CanterError(f"'policy_hparams.{policy}.frozen: true' keeps the weights that init_from loads: give "
                          f"init_from (a run that trained policy '{policy}'), or algo: random for a random policy")
    return "frozen"


#: hyperparameters that act only in updates (optimiser, rollouts, replay, losses, targets): a frozen policy, which
#: never updates, ignores them (those that shape its networks or its sampled actions, as exploration, still act)
TRAINING_ONLY = frozenset((
    "lr", "lr_schedule", "n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda", "clip_range", "clip_range_vf",
    "clip_schedule", "normalize_advantage", "ent_coef", "vf_coef", "max_grad_norm", "target_kl", "adam_eps",
    "optimizer", "optimizer_eps", "rms_alpha", "manual_backward", "normalize_reward", "buffer_size", "learning_starts",
    "train_freq", "train_freq_unit", "gradient_steps", "target_update_interval", "tau", "policy_delay",
    "target_policy_noise", "target_noise_clip", "n_critic_updates", "cg_damping", "cg_max_steps",
    "line_search_max_iter", "line_search_shrinking_factor", "per_alpha", "per_beta0", "per_eps", "prioritized",
    "replay_ratio", "replay_start", "her_goals", "her_strategy", "huber", "double_q", "n_step", "delta", "q_coef",
    "c_clip", "rho_clip", "pg_rho_clip", "vtrace_lambda", "correction_c", "trust_region", "avg_decay",
    "top_quantiles_to_drop_per_net", "target_entropy", "target_entropy_scale"))


def frozen_ignored(run: RunConfig, policy: str) -> list[str]:
    """The ``policy_hparams`` entries of a frozen ``policy`` (``frozen: true``) that it never uses: those of
    :data:`TRAINING_ONLY` (a frozen policy takes no gradient steps); ``[]`` for a policy that is not frozen."""
    own = run.policy_hparams.get(policy)
    if not isinstance(own, dict) or fixed_policy(run, policy) != "frozen":
        return []
    return [str(k) for k in own if k in TRAINING_ONLY]


def fixed_policies(run: RunConfig, policies: list[str]) -> dict[str, str | None]:
    """:func:`fixed_policy` of each of ``policies``; a run in which none would learn is refused."""
    fixed = {p: fixed_policy(run, p) for p in policies}
    if all(fixed.values()):
        raise CanterError(f"every policy is fixed ({', '.join(f'{p}: {k}' for p, k in fixed.items())}): nothing "
                          f"would learn; let one train (drop its algo: random or frozen: true)")
    return fixed


def policy_algo(run: RunConfig, policy: str) -> str:
    """The algorithm that trains ``policy`` of a multi-policy run: its ``policy_hparams`` entry ``algo``, else the
    run's."""
    own = run.policy_hparams.get(policy)
    name = own.get("algo", run.algo) if isinstance(own, dict) else run.algo
    if not isinstance(name, str) or name == run.algo:
        return name
    if name.lower() == RANDOM:
        return RANDOM
    from canter.registry import registered_name

    try:  # as the run's algo is recorded: 'PPO' is the run's ppo (an unknown name: policy_algorithm_class says so)
        return registered_name("algorithm", name)
    except CanterError:
        return name


def recorded_policy_algos(run: RunConfig) -> dict[str, Any]:
    """``run.policy_hparams`` with each ``algo`` entry as the algorithm is registered (``DQN`` -> ``dqn``), as the run's
    own ``algo`` is recorded (a new mapping: the caller's is left as it was)."""
    return {p: {**own, "algo": policy_algo(run, p)} if isinstance(own, dict) and "algo" in own else own
            for p, own in run.policy_hparams.items()}


def policy_run(run: RunConfig, policy: str, seed: int) -> RunConfig:
    """The run one policy's agent is built with: ``run`` as one shared policy, seeded ``seed``; a policy of its own
    algorithm (:func:`policy_algo`) takes that algorithm's own model and agent, not the run's."""
    import dataclasses

    single = dataclasses.replace(run, policies="shared", policy_hparams={}, seed=seed)
    algo = policy_algo(run, policy)
    return single if algo == run.algo else dataclasses.replace(single, algo=algo, model=None, agent=None)


def policy_algorithm_class(run: RunConfig, policy: str) -> Any:
    """The algorithm class of ``policy`` (:func:`policy_algo`; a random policy's is
    :class:`~canter.agents.fixed.RandomPolicy`, whose ``check_spaces`` takes any); one of another algorithm than the
    run's must train as an independent learner of the on- or off-policy family (the trainers that step in lockstep)."""
    from canter.registry import lookup

    name = policy_algo(run, policy)
    key = f"policy_hparams.{policy}.algo"
    if not isinstance(name, str) or not name.strip():
        raise CanterError(f"'{key}' must be an algorithm's name (ppo, dqn, ...) or random, got {name!r}")
    if name == RANDOM:  # acts in any space (its check_spaces accepts them)
        from canter.agents.fixed import RandomPolicy

        return RandomPolicy
    try:
        cls = lookup("algorithm", name)
    except CanterError:
        from canter.errors import unknown
        from canter.registry import names

        raise CanterError(f"'{key}': {unknown('algorithm', name, [*names('algorithm'), RANDOM])}") from None
    if name != run.algo:
        if run.central_state or getattr(cls, "central_critic", False) or getattr(cls, "joint_agents", False):
            raise CanterError(f"'{key}: {name}': a policy of its own algorithm is an independent learner; "
                              f"central_state, mappo and qmix train every policy with the run's algorithm")
        if cls.family not in ("on_policy", "off_policy"):
            raise CanterError(f"'{key}: {name}': {name} ({cls.family}) cannot train one of several policies; "
                              f"a policy's own algorithm must be an on- or off-policy one (ppo, a2c, dqn, sac, ...)")
    return cls


def policy_message(run: RunConfig, policy: str, message: str, detail: str = "") -> str:
    """``message`` (an error or warning of one policy's trainer) told as that policy's: prefixed with its name
    (and ``detail``), and each ``hparams.KEY`` that the policy's ``policy_hparams`` set named
    ``policy_hparams.<policy>.KEY``."""
    own = run.policy_hparams.get(policy) or {}
    told = re.sub(r"\bhparams\.(\w+)", lambda m: f"policy_hparams.{policy}.{m[1]}" if m[1] in own else m[0], message)
    return f"policy '{policy}'{detail}: {told}"


def split_policy_net_arch(new: Any, old: Any, run_algo: str, source: str, given: set[str]) -> Any:
    """``policy_hparams`` as one key of layer ``source`` left it (``old`` before), each policy's Stable-Baselines3
    ``net_arch`` mapping this key gave (``{pi: [...], vf: [...]}``, of the policy's algorithm, else ``run_algo``)
    as its ``net_arch`` and ``critic_net_arch``, as a layer's ``hparams`` are read
    (:func:`canter.config_values.sb3_net_arch`). The mapping was read only once every layer was in: a lower layer's
    ``critic_net_arch`` won over a later layer's mapping, and ``config.yaml`` recorded the mapping. ``given`` (the
    policies whose critic this layer set) refuses a layer other than ``--set`` giving the critic twice, as
    ``hparams`` are refused."""
    if not isinstance(new, dict):
        return new
    from canter.config_values import sb3_net_arch
    from canter.registry import lookup

    old = old if isinstance(old, dict) else {}
    out = dict(new)
    for policy, own in new.items():
        was = old.get(policy) if isinstance(old.get(policy), dict) else {}
        if not isinstance(own, dict) or own == was:
            continue
        key = f"policy_hparams.{policy}.net_arch"
        algo = own.get("algo", run_algo)
        pairs: list[tuple[str, Any]] = []
        if isinstance(own.get("net_arch"), (dict, str)) and isinstance(algo, str) and algo != RANDOM:
            try:
                pairs = sb3_net_arch(lookup("algorithm", algo).Config, "net_arch", own["net_arch"], key)
            except CanterError:  # an unknown algorithm, a mapping of the wrong keys: said where the policy is built
                pairs = []
        critic_given = "critic_net_arch" in own and own.get("critic_net_arch") != was.get("critic_net_arch", object())
        both = len(pairs) == 2 and critic_given
        if source != "--set" and (both or (policy in given and (len(pairs) == 2 or critic_given))):
            raise CanterError(f"'policy_hparams.{policy}.critic_net_arch' is set both by net_arch's mapping and by "
                              f"critic_net_arch in {source}; give it once")
        if len(pairs) == 2:
            out[policy] = {**{k: v for k, v in own.items() if k != "critic_net_arch"}, **dict(pairs)}
        if len(pairs) == 2 or critic_given:
            given.add(policy)
    return out
