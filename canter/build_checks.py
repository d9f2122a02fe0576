"""Checks a run makes as it is built: each policy's spaces against its algorithm, and a warning for patience
settings (``early_stopping``, ``plateau_patience``) that can never act."""
from __future__ import annotations

from typing import Any

from canter.config import RunConfig
from canter.errors import CanterError, CanterWarning, warn


def warn_idle_patience(run: RunConfig, rollout: tuple[int, int] | None = None,
                       phase: tuple[int, int] | None = None) -> None:
    """Warn where ``early_stopping`` or ``plateau_patience`` can never act: both count evaluations without improvement
    after a first one, whatever the ``monitor`` (``rolling`` reads the training return at each evaluation), and
    ``eval_every >= max_steps`` evaluates once, at the end (``eval_every: 0`` and ``eval_episodes: 0`` are refused);
    so does an on-policy run (``rollout``: its ``n_steps`` and envs) whose first evaluation is at its last rollout's end,
    or an off-policy run (``phase``: its ``train_freq`` in env steps and envs) at its last training phase's end: both
    evaluate only between iterations, whole rollouts or phases, and the evaluations are counted as they come."""
    keys = [k for k in ("early_stopping", "plateau_patience") if getattr(run, k) is not None]
    if not keys or run.eval_episodes <= 0:
        return
    from canter.trainers.on_policy import agent_rows, rollout_rows

    if phase is not None:  # an off-policy phase: train_freq env steps rounded up to whole vector steps
        n_envs = phase[1]
        n_steps = -(-phase[0] // n_envs)
    else:
        n_steps, n_envs = rollout or (1, 1)
    size = n_steps * n_envs  # the steps between two evaluation chances
    rows = rollout_rows(n_envs, run.n_envs, agent_rows(run))  # a multi-agent env's: agent rows, not envs
    unit, made, knob = (("training phase", f"train_freq {phase[0]} on {rows}", "train_freq") if phase is not None
                        else ("rollout", f"n_steps {n_steps} x {rows}", "n_steps"))
    end, first = -(-run.max_steps // size) * size, -(-run.eval_every // size) * size
    what = (f"{' and '.join(keys)} count{'' if len(keys) > 1 else 's'} evaluations, but",
            f"so {'they' if len(keys) > 1 else 'it'} can never act")
    if size > 1 and end == size:
        warn(CanterWarning(
            f"{what[0]} max_steps ({run.max_steps}) is one {unit} ({made} = {size} "
            f"steps), evaluated only at its end, {what[1]}; set max_steps above {size} or a smaller {knob}"))
    elif run.eval_every >= run.max_steps:  # the advice: an eval_every that gives each patience one more evaluation
        need = max(getattr(run, k) for k in keys) + 1
        warn(CanterWarning(
            f"{what[0]} eval_every ({run.eval_every}) >= max_steps ({run.max_steps}) evaluates only at the end, "
            f"{what[1]}; {_patience_advice(run, size, need, run.max_steps - 1, 'below max_steps, e.g.', unit)}"))
    elif first >= end:
        need = max(getattr(run, k) for k in keys) + 1
        warn(CanterWarning(
            f"{what[0]} eval_every ({run.eval_every}) with {unit}s of {size} steps ({made}) "
            f"evaluates first at step {first}, the run's end (max_steps {run.max_steps}), {what[1]}; "
            f"{_patience_advice(run, size, need, end - size, 'to at most', unit)}"))
    else:  # several evaluations, but maybe not one more than a patience: it waits for evaluations that never come
        count = evaluation_count(run.max_steps, run.eval_every, size)
        idle = [k for k in keys if getattr(run, k) >= count]
        if idle:
            need = max(getattr(run, k) for k in idle) + 1
            told = " and ".join(f"{k} ({getattr(run, k)})" for k in idle)
            fix = _patience_advice(run, size, need, run.eval_every, "to at most", unit)
            warn(CanterWarning(
                f"{told} count{'' if len(idle) > 1 else 's'} evaluations without improvement after a first one, but "
                f"max_steps ({run.max_steps}) with eval_every ({run.eval_every}) evaluates {count} times, so "
                f"{'they' if len(idle) > 1 else 'it'} can never act; {fix}"))


def _patience_advice(run: RunConfig, size: int, need: int, high: int, how: str, unit: str = "rollout") -> str:
    """What to change so that a run evaluating every ``size`` steps at most makes ``need`` evaluations: the largest
    ``eval_every`` up to ``high`` that does (``how``: the words before it), or, where none does (a run of two
    rollouts evaluates at most twice, whatever ``eval_every``), a smaller patience or a larger ``max_steps``
    (``unit``: what an iteration of ``size`` steps is called, a rollout or an off-policy training phase)."""
    most = evaluation_count(run.max_steps, 1, size)  # one per iteration: no eval_every gives more
    # (size 1: iterations of varying size, off-policy or several policies: one step each at the most)
    if most < need:
        per = f"once per {unit} of {size} steps" if size > 1 else "at most once per step"
        return f"the run evaluates at most {most} times ({per}): set a patience below {most} or a larger max_steps"
    low, high = 1, max(1, high)  # the largest eval_every that gives `need` evaluations (count falls with it)
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if evaluation_count(run.max_steps, mid, size) >= need else (low, mid - 1)
    return f"set eval_every {how} {low} (--eval-every {low}) or a smaller patience"


def evaluation_count(max_steps: int, eval_every: int, size: int = 1) -> int:
    """How many evaluations a run of ``max_steps`` evaluated every ``eval_every`` steps makes, its last at the end,
    where it evaluates only at iterations' ends, every ``size`` steps (an on-policy rollout, an off-policy training
    phase; 1 elsewhere, where an iteration's size varies: then at most this many). One after each iteration that
    reaches a multiple of ``eval_every``, one where an iteration passes several, and one at the end (the run's last iteration's)."""
    end = -(-max_steps // size) * size
    if eval_every < size:  # every iteration reaches one
        return end // size
    last = end // eval_every * eval_every  # the last multiple reached by the end: evaluated at the end itself?
    return end // eval_every + (0 if last > end - size else 1)


def check_spaces(algo_cls: Any, observation_space: Any, action_space: Any, run: RunConfig | None = None) -> None:
    """``algo_cls.check_spaces`` for one policy's spaces, or for each policy's (dicts policy -> space; with ``run``,
    a policy's own algorithm, ``policy_hparams.<policy>.algo``, checks its spaces)."""
    from gymnasium.spaces import Dict

    if not isinstance(observation_space, Dict):
        algo_cls.check_spaces(observation_space, action_space)
        return
    from canter.multiagent_config import policy_algorithm_class

    for policy, space in observation_space.spaces.items():
        try:
            (algo_cls if run is None else policy_algorithm_class(run, policy)).check_spaces(space, action_space[policy])
        except CanterError as exc:
            raise CanterError(f"policy '{policy}': {exc}") from None


#: gymnasium's normalising wrappers -> (what they scale, the setting that does it with the training statistics frozen
#: in evaluation, what goes wrong in an evaluation env of its own)
SELF_NORMALISING = {
    "NormalizeObservation": ("observations", "normalize_obs", "the policy acts on observations scaled by "
                             "statistics learnt from evaluation episodes alone, not the training statistics"),
    "NormalizeReward": ("rewards", "normalize_reward", "its returns (the best checkpoint, target_reward, early "
                        "stopping) are of rewards scaled by statistics of its own, not the env's rewards"),
}


def warn_self_normalising_env(run: RunConfig, env: Any) -> None:
    """Warn where the env's copies (``env``: the run's evaluation env) normalise their own observations or rewards
    (gymnasium's ``NormalizeObservation``, ``NormalizeReward``, as a ported ``VecNormalize`` would): each copy keeps
    statistics of its own, so the evaluations and ``canter eval`` do not use the training statistics, frozen, as
    Stable-Baselines3's ``EvalCallback`` does (``sync_envs_normalization``); the run's ``normalize_obs`` and
    ``normalize_reward`` do. Copies in this process only (``async`` workers' are not looked into)."""
    import gymnasium as gym

    copies = getattr(getattr(env, "env", None), "envs", None)
    if not copies:
        return
    wrapper, names = copies[0], []
    while isinstance(wrapper, gym.Wrapper):
        if type(wrapper).__name__ in SELF_NORMALISING and type(wrapper).__module__.startswith("gymnasium."):
            names.append(type(wrapper).__name__)
        wrapper = wrapper.env
    for name in dict.fromkeys(names):
        what, setting, wrong = SELF_NORMALISING[name]
        warn(CanterWarning(
            f"env '{run.env}' normalises its own {what} (gymnasium's {name}): each env copy keeps statistics of its "
            f"own, so in the evaluation env (and canter eval, canter play) {wrong}; drop the wrapper and set "
            f"{setting}: true (--set {setting}=true: the agent's statistics, learnt in training, frozen in "
            f"evaluation and saved with its checkpoints)"))
