"""``init_from``: a new run that starts from a saved agent's weights, on the same env or another one with the
same spaces (Stable-Baselines3's ``PPO.load(path, env=new_env)`` followed by ``model.learn``).

The run is new in every other way: its own seed, counters (step 0, so schedules start over), optimizers,
buffers and run directory. What is taken over is what ``canter.load`` restores by default
(``weights_only``): the networks and the observation-normalisation statistics, plus the reward-normalisation
statistics (``normalize_reward``; not the per-env running returns). A source normalised otherwise than the run
(``normalize_obs``, ``normalize_value``, ``normalize_reward``) is refused in one line. A run resumed with
``--resume`` continues from its own ``last`` checkpoint and does not read ``init_from`` again.
"""
from __future__ import annotations

from typing import Any

from canter.agents.fixed import RANDOM
from canter.errors import CanterError


def check_source(path: str, algo: str, run: Any = None) -> None:
    """The checks of :func:`init_agent` that need only the checkpoint's JSON (that it exists, and holds an ``algo``
    agent, each of whose policies trained with the algorithm that ``run`` gives it), made before the trainer is built:
    they came after its envs and networks were built, and after its own warnings (a budget below one rollout, a
    warm-up that never learns), so the one-line error was a second line."""
    from canter.checkpoint import find_checkpoint, read_metadata

    try:
        base = find_checkpoint(path)
        meta = read_metadata(base)
    except CanterError as exc:
        raise CanterError(f"init_from: {exc}") from None
    _check_config(base, meta)
    _check_algorithm(path, meta, algo, run)
    from canter.checkpoint_finite import nonfinite_in_file, refuse_nonfinite

    try:  # NaN weights: before the build, whose warnings made the one-line error a second line
        found = nonfinite_in_file(base, weights_only=True)
    except Exception:  # an unreadable file: load_checkpoint, after the build, says what is wrong with it
        found = []
    if found:  # damage (a sha256 that no longer fits) is the cause, not a run that diverged: its error comes first
        from canter.checkpoint import load_checkpoint

        try:
            load_checkpoint(base)
        except CanterError as exc:
            raise CanterError(f"init_from: {exc}") from None
    refuse_nonfinite(base, found, "init_from", weights_only=True)


def _check_config(base: Any, meta: dict[str, Any]) -> None:
    """Refuse a checkpoint whose JSON ``config`` (or its ``hparams``, ``policy_hparams``) is not a mapping, as
    ``canter.load`` does: a hand-edited one (``config: [1]``) was an AttributeError traceback."""
    config = meta.get("config")
    if config is None:
        return
    if not isinstance(config, dict) or not all(isinstance(config.get(k) or {}, dict)
                                               for k in ("hparams", "policy_hparams")):
        raise CanterError(f"init_from: checkpoint {base} has no valid 'config' in its metadata")


def _check_algorithm(path: str, meta: dict[str, Any], algo: str, run: Any = None,
                     ours: Any = None) -> None:
    """Refuse a checkpoint (its JSON ``meta``) of another algorithm than ``algo``, or (``run`` a multi-policy run's
    config) one whose policy trained with another algorithm than the one ``run`` gives it (``policy_hparams.<p>.algo``):
    its networks were loaded without a word where their shapes fit (an A2C policy into a PPO one), else refused
    naming a hyperparameter that was not the difference. Only policies this run has are compared: ``ours``, its
    policy names once built; before the build, a source of another ``policies`` mode, env or ``env_kwargs`` (which
    may make other agents: ``n_agents``) is left to the build
    (its policies are not this run's: a ``policies: agent`` source's DQN ``agent_1`` into a ``type`` run was refused
    as "set policy_hparams.agent_1.algo=dqn", a policy this run does not have)."""
    config = meta.get("config") or {}
    found = config.get("algo", meta.get("algorithm"))
    if found != algo:
        raise CanterError(f"init_from '{path}' holds a {found} agent, not {algo}: train {found} from it, or "
                          f"name a {algo} run")
    if run is None or getattr(run, "policies", "shared") not in ("type", "agent"):
        return
    from canter.multiagent_config import policy_algo

    if ours is None and (config.get("policies", "shared") != run.policies or config.get("env") != run.env or (
            config.get("env_kwargs") or {}) != (getattr(run, "env_kwargs", None) or {})):
        return  # its policies may not be this run's (another env, or its kwargs: agent_2 of n_agents=3 is none of 2's)
    theirs_all = config.get("policy_hparams") if isinstance(config.get("policy_hparams"), dict) else {}
    for policy in sorted({*theirs_all, *(run.policy_hparams or {})}, key=str):
        if ours is not None and str(policy) not in ours:
            continue
        saved = theirs_all.get(policy)
        theirs = saved.get("algo", found) if isinstance(saved, dict) else found
        mine = policy_algo(run, str(policy))  # not 'ours' (the policy names): every later policy went unchecked
        if RANDOM in (theirs, mine) or theirs == mine:  # a random policy has no networks (_activations says more)
            continue
        raise CanterError(f"init_from '{path}': its policy '{policy}' trained with {theirs}, this run's with {mine}: "
                          f"set policy_hparams.{policy}.algo={theirs}, or name a run whose '{policy}' trained "
                          f"with {mine}")


def init_agent(built: Any, path: str) -> None:
    """Load the networks and observation statistics of the checkpoint at ``path`` (a run directory: its ``best``,
    else ``last``; or a checkpoint) into the agent of ``built`` (a trainer, or a :class:`~canter.run.Run`) before
    it trains. Another algorithm, other spaces or networks of other shapes are refused in one line (``built`` is
    closed then)."""
    from canter.checkpoint import checkpoint_space, find_checkpoint, load_checkpoint
    from canter.checkpoint_finite import refuse_nonfinite
    from canter.envs import spaces_mismatch

    trainer = getattr(built, "trainer", built)
    agent, run = trainer.agent, trainer.run
    try:
        try:
            base = find_checkpoint(path)
            state, meta = load_checkpoint(base)
        except CanterError as exc:
            raise CanterError(f"init_from: {exc}") from None
        refuse_nonfinite(base, state, "init_from", weights_only=True)  # NaN weights: a run that diverged, or damage
        _check_config(base, meta)
        config = meta.get("config") or {}
        # checked before the build too (check_source): the files may change, and only now are its policies known
        _check_algorithm(path, meta, run.algo, run, set(getattr(agent, "agents", ())))
        _check_normalisation(path, state.get("agent") if isinstance(state, dict) else None, agent, config)
        for policy, act, ours in _activations(config, agent):
            if act != ours:  # the same shapes: loaded without a word, into networks that compute something else
                whose, key = ("its networks use", "") if policy is None else (f"its policy '{policy}' uses",
                                                                               f"policy_hparams.{policy}.")
                raise CanterError(f"init_from '{path}': {whose} activation {act}, this run's {ours}: set "
                                  f"{key}activation={act}")
        saved = tuple(checkpoint_space(meta, w, base) for w in ("observation_space", "action_space"))
        mismatch = spaces_mismatch(saved, (agent.observation_space, agent.action_space), "was trained on",
                                   f"{run.env}")
        if mismatch is not None:
            hint = _policies_hint(config, run)
            raise CanterError(f"init_from '{path}' {mismatch}{hint}")
        _check_image_reading(path, saved[0], agent.observation_space)
        try:
            agent.load_state_dict(state["agent"], weights_only=True)
        except (KeyError, RuntimeError, ValueError, TypeError) as exc:
            detail = " ".join(str(exc).split())
            differ = _differing(config.get("hparams") or {}, agent.algorithm.config)
            raise CanterError(f"init_from '{path}': its networks do not fit this run's (give the hyperparameters "
                              f"that shape them as its run had them{differ}): "
                              f"{detail[:160] + '...' if len(detail) > 160 else detail}") from None
        _carry_return_statistics(state["agent"], agent)
    except BaseException:
        built.close()
        raise


def _policies_hint(config: dict[str, Any], run: Any) -> str:
    """``"; it trained with policies: MODE: set policies=MODE"`` where the source (its run ``config``) of a parallel
    multi-agent run on this run's env (and ``env_kwargs``) trained with another ``policies`` mode, whose policies are
    not this run's (so neither are the spaces); empty otherwise (a single-agent env or a turn-based game takes no
    ``policies``; a source on another env differs whatever the mode: the mode was named, and did not help)."""
    from canter.envs.multiagent_ids import is_multiagent
    from canter.envs.turns import is_turn_based

    theirs, env = config.get("policies", "shared"), str(getattr(run, "env", ""))
    if theirs == getattr(run, "policies", "shared") or not is_multiagent(env) or is_turn_based(env):
        return ""
    if config.get("env") != run.env or (config.get("env_kwargs") or {}) != (getattr(run, "env_kwargs", None) or {}):
        return ""  # another env (or its kwargs): its spaces differ whatever the mode, as _check_algorithm reasons
    return f"; it trained with policies: {theirs}: set policies={theirs}"


def _check_normalisation(path: str, weights: Any, agent: Any, config: dict[str, Any] | None = None) -> None:
    """Refuse a source whose networks take normalised observations (``normalize_obs``, its ``obs_rms``) where this
    run's do not, or the other way round: for the agent, or for each policy of a multi-policy agent (its weights
    ``{"policies": {policy: ...}}``, its ``normalize_obs`` its own, ``policy_hparams.<policy>.normalize_obs``), whose
    mismatch was loaded without a word. A policy acting at random here or in the source (``config``, its run config)
    has no networks to feed: :func:`_activations` says what applies to it."""
    policies = getattr(agent, "agents", None)
    if isinstance(policies, dict):
        saved = weights.get("policies") if isinstance(weights, dict) else None
        own = (config or {}).get("policy_hparams") or {}
        random = {p for p, member in policies.items() if getattr(member.algorithm, "config", None) is None
                  or (isinstance(own.get(p), dict) and own[p].get("algo") == RANDOM)}
        pairs = [(p, (saved or {}).get(p), member) for p, member in policies.items() if p not in random]
    else:
        pairs = [(None, weights, agent)]
    for policy, own, member in pairs:
        _check_value_normalisation(path, policy, own, member)
        _check_reward_normalisation(path, policy, own, member)
        theirs = bool(isinstance(own, dict) and own.get("obs_rms"))  # its networks take normalised observations
        if theirs == (getattr(member, "obs_rms", None) is not None):
            continue
        if theirs and getattr(member, "images_raw", False):  # normalize_obs on images saved with statistics before
            continue  # 2026-11-27: Agent.load_state_dict gives the member them back, as loading the source does
        whose, key = ("its run", "") if policy is None else (f"its policy '{policy}'", f"policy_hparams.{policy}.")
        raise CanterError(f"init_from '{path}': {whose} {'normalised' if theirs else 'did not normalise'} "
                          f"observations, and its networks expect them so: set {key}normalize_obs={str(theirs).lower()}")


def _carry_return_statistics(weights: Any, agent: Any) -> None:
    """Give ``agent`` (each policy of a multi-policy one) the source's reward-normalisation statistics
    (``normalize_reward``, its ``ret_rms``) where both normalise rewards: its critic learned on rewards scaled by
    them, and they restarted at var 1 (rl-zoo3 continues a trained agent with its VecNormalize statistics). The
    running discounted return of each env is not carried: the new run's episodes start with its own envs."""
    policies = getattr(agent, "agents", None)
    saved = weights.get("policies") if isinstance(weights, dict) and isinstance(policies, dict) else None
    pairs = ([((saved or {}).get(p), member) for p, member in policies.items()] if isinstance(policies, dict)
             else [(weights, agent)])
    for own, member in pairs:
        stats = own.get("ret_rms") if isinstance(own, dict) else None
        if stats and getattr(member, "ret_rms", None) is not None:
            member.ret_rms.load_state_dict(stats)


def _check_value_normalisation(path: str, policy: str | None, own: Any, member: Any) -> None:
    """Refuse a source whose critic outputs returns standardised by its value statistics (PPO's and MAPPO's
    ``normalize_value``, its ``value_rms``) where this run's reads them as returns, or the other way round: it was
    loaded without a word, and the new run's first advantages came from values off by the returns' scale."""
    algorithm = own.get("algorithm") if isinstance(own, dict) else None
    extra = algorithm.get("extra") if isinstance(algorithm, dict) else None
    theirs = bool(isinstance(extra, dict) and extra.get("value_rms"))
    if theirs == (getattr(member.algorithm, "value_rms", None) is not None):
        return
    whose, key = ("its run", "") if policy is None else (f"its policy '{policy}'", f"policy_hparams.{policy}.")
    raise CanterError(f"init_from '{path}': {whose} {'normalised' if theirs else 'did not normalise'} values "
                      f"(normalize_value), and its critic outputs them so: set {key}normalize_value={str(theirs).lower()}")


def _check_reward_normalisation(path: str, policy: str | None, own: Any, member: Any) -> None:
    """Refuse a source that scaled its rewards by its reward statistics (``normalize_reward``, its ``ret_rms``) where
    this run does not, or the other way round: its critic learned values of the rewards as they were scaled, so the
    new run's first advantages (or targets) came from values off by that scale; it was taken without a word (as
    ``normalize_obs`` and ``normalize_value`` mismatches are refused, the statistics are carried where both set it)."""
    theirs = bool(isinstance(own, dict) and own.get("ret_rms"))
    if theirs == (getattr(member, "ret_rms", None) is not None):
        return
    whose, key = ("its run", "") if policy is None else (f"its policy '{policy}'", f"policy_hparams.{policy}.")
    raise CanterError(f"init_from '{path}': {whose} {'scaled' if theirs else 'did not scale'} rewards "
                      f"(normalize_reward), and its critic learned on them so: set "
                      f"{key}normalize_reward={str(theirs).lower()}")


def _check_image_reading(path: Any, saved: Any, ours: Any) -> None:
    """Refuse (one line) a source whose networks read its image observations otherwise than this run's env gives
    them: as canter did before 2026-11-27 (:func:`canter.models.cnn.former_image_layout`), or an Atari run's
    stacks that read as channels-last by shape (``[12, 10, 10]``) saved before the Atari envs gave their layout
    (it was a state_dict size mismatch, 'give the hyperparameters that shape them'). A source that read them as
    the env now gives them (such stacks read channels-first before canter recorded layouts) is not refused."""
    import gymnasium as gym

    from canter.envs.spaces import read_alike
    from canter.models.cnn import image_layout
    from canter.resume_checks import _LAYOUT_NAMES, packed_reading_difference

    if isinstance(saved, gym.spaces.Dict) and isinstance(ours, gym.spaces.Dict):  # a multi-policy agent's policies
        for policy in saved.spaces.keys() & ours.spaces.keys():
            _check_image_reading(path, saved[policy], ours[policy])
        return
    former = getattr(saved, "saved_image_layout", None)
    if (former is not None and former != (image_layout(ours) or "")) or getattr(saved, "saved_image_layouts", None) \
            or not read_alike(saved, ours):
        raise CanterError(f"init_from '{path}': its networks read the image observations as canter did before "
                          f"2026-11-27 (channels-last only with 1, 3 or 4 channels, frame stacks as values), so its "
                          f"weights fit no network this run builds; train without init_from")
    difference = packed_reading_difference(saved, ours)
    if difference:
        raise CanterError(f"init_from '{path}': its networks read {difference}, so its weights fit no network this "
                          f"run builds; train without init_from")
    was, now = image_layout(saved), image_layout(ours)
    if was != now:
        raise CanterError(f"init_from '{path}': its networks read the {tuple(saved.shape)} image observations as "
                          f"{_LAYOUT_NAMES[was]}, this run's env gives them as {_LAYOUT_NAMES[now]} (an Atari run "
                          f"saved before 2026-11-27 read such frame stacks so), so its weights fit no network this "
                          f"run builds; train without init_from")


def _activations(config: dict[str, Any], agent: Any) -> list[tuple[str | None, Any, Any]]:
    """``(policy, the source's activation, this run's)`` for the agent (policy None), or for each policy of a
    multi-policy agent: the source run's ``policy_hparams`` entry of that policy, else its ``hparams``."""
    act = (config.get("hparams") or {}).get("activation")
    policies = getattr(agent, "agents", None)
    if not isinstance(policies, dict):
        return [(None, act, getattr(getattr(agent.algorithm, "config", None), "activation", act))]
    own = config.get("policy_hparams") or {}
    found = []
    for policy, member in policies.items():
        saved = own.get(policy) if isinstance(own.get(policy), dict) else {}
        if saved.get("algo") == RANDOM or member.algorithm.config is None:  # a random policy: no networks
            if member.algorithm.config is not None:
                raise CanterError(f"init_from: its policy '{policy}' acted at random (algo: random) and has no "
                                  f"networks to load: give policy_hparams.{policy}.algo=random here too, or name a "
                                  f"run that trained it")
            continue
        default = act
        if saved.get("algo", config.get("algo")) != config.get("algo"):  # a policy of its own algorithm: its default
            from canter.registry import lookup

            default = getattr(lookup("algorithm", saved["algo"]).Config, "activation", None)
        theirs = saved.get("activation", default)
        found.append((policy, theirs, getattr(member.algorithm.config, "activation", theirs)))
    return found


#: words in the names of hyperparameters that shape networks: those differing are named alone
_SHAPING = ("arch", "hidden", "lstm", "critic", "atoms", "quantile", "dueling", "noisy", "encoder", "trunk")


def _differing(theirs: dict[str, Any], config: Any) -> str:
    """``"; differing: net_arch [256, 256] there, [64, 64] here, ..."``: the hyperparameters of this run's ``config``
    that the source run had otherwise (a shipped preset of the source's env, absent here): those that shape
    networks where some do, at most four; ``""`` where none differ."""
    import dataclasses

    ours = dataclasses.asdict(config) if dataclasses.is_dataclass(config) else {}
    names = [k for k in ours if k in theirs and theirs[k] != ours[k]]
    shaping = [k for k in names if any(word in k for word in _SHAPING)]
    names = shaping or names
    shown = ", ".join(f"{k} {theirs[k]} there, {ours[k]} here" for k in names[:4])
    return f"; differing: {shown}{', ...' if len(names) > 4 else ''}" if names else ""
