"""Evaluation episodes on separate env instances, with the deterministic policy or (a run's
``eval_deterministic: false``, ``deterministic=False``) its samples from a seeded stream of their own."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from canter.envs.vector import VecEnv
from canter.errors import bool_argument, keywords_checked

if TYPE_CHECKING:
    from canter.agents.agent import Agent


@dataclass(frozen=True)
class EvalResult:
    """Returns and lengths of a set of evaluation episodes.

    Attributes:
        mean_return: the mean of ``returns``.
        std_return: their standard deviation (NumPy's ``std``, as Stable-Baselines3's ``evaluate_policy``).
        returns: each episode's undiscounted return, in the order the episodes ended (a multi-agent env's episode:
            one per agent).
        lengths: each episode's number of env steps, in the same order.
        successes: 1.0 / 0.0 per episode whose env reported ``info["is_success"]`` at its end (goal envs; else empty).
        n_episodes: episodes run, where a multi-agent env's episode gives one return per agent (None: one return each).
        deterministic: whether the episodes were played by the deterministic policy (False: the policy's samples).
    """

    mean_return: float
    std_return: float
    returns: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    successes: list[float] = field(default_factory=list)
    n_episodes: int | None = None
    deterministic: bool = True

    @property
    def episodes(self) -> int:
        """Number of episodes evaluated (a multi-agent env's episode once, however many agents returned)."""
        return len(self.returns) if self.n_episodes is None else self.n_episodes

    @property
    def success_rate(self) -> float | None:
        """The fraction of successful episodes, where the env reports success (else None)."""
        return float(np.mean(self.successes)) if self.successes else None

    def describe(self) -> str:
        """``"480.00 ± 5.00 over 2 episodes"`` (``1 episode``), with ``", success rate 50%"`` where the env
        reports success: the evaluation as ``canter train``'s and ``canter eval``'s lines give it."""
        n = self.episodes
        success = "" if self.success_rate is None else f", success rate {self.success_rate:.0%}"
        sampled = "" if self.deterministic else " of the stochastic policy"
        return (f"{self.mean_return:.2f} ± {self.std_return:.2f} over {n} episode{'' if n == 1 else 's'}{sampled}"
                f"{success}")


def seed_random_policies(agent: Any, seed: int | None) -> None:
    """Seed the draws of a multi-policy agent's random policies (``algo: random``) from ``seed``, one stream each,
    so that an evaluation with a seed is repeatable (None: they draw on)."""
    agents = getattr(agent, "agents", None)
    if seed is None or not isinstance(agents, dict):
        return
    for s, member in zip(np.random.SeedSequence(seed).generate_state(len(agents)), agents.values()):
        if hasattr(member, "seed_evaluation"):
            member.seed_evaluation(int(s))


def eval_policy(agent: Any, deterministic: bool, seed: int | None) -> Any:
    """``act(obs, starts)`` for :func:`evaluate` and :func:`canter.play.play`: ``agent.predict``, or
    (``deterministic`` False) the agent's samples from a generator of their own seeded with ``seed`` (the agent's
    own stream untouched; a recurrent agent's exploring memory zeroed where ``starts``, the rows that begin an
    episode, says)."""
    if deterministic:
        return lambda obs, starts: agent.predict(obs)
    import torch

    explore = getattr(agent, "explore", None)
    agents = getattr(agent, "agents", None)  # several policies (a MultiPolicyAgent): a generator each, from ``seed``
    if explore is None and isinstance(agents, dict):  # (their own streams drawn from, the result was not repeatable)
        seeds = np.random.SeedSequence(seed or 0).generate_state(len(agents))
        gens = {p: torch.Generator().manual_seed(int(s)) for p, s in zip(agents, seeds)}
        return lambda obs, starts: {p: agents[p].explore(o, generator=gens[p]) for p, o in obs.items()}
    if explore is None:  # another agent, without explore: its own samples
        return lambda obs, starts: agent.predict(obs, deterministic=False)
    generator = torch.Generator().manual_seed(seed or 0)
    if hasattr(agent, "begin_episodes"):
        return lambda obs, starts: explore(obs, generator=generator, episode_start=starts)
    return lambda obs, starts: explore(obs, generator=generator)


def evaluate(agent: Agent, env: VecEnv, n_episodes: int, seed: int | None = None,
             deterministic: bool = True) -> EvalResult:
    """Run exactly ``n_episodes`` episodes with ``agent.predict`` (``deterministic`` False: the policy's samples,
    reproducible with ``seed``) and summarise the returns.

    Episodes are spread evenly over the env's copies (copy ``c`` of ``C`` runs ``(n_episodes + c) // C``
    of them), so the result does not favour short episodes. A multi-agent env's copy has a sub-env
    per agent (``copy_index``): each of its episodes counts the return of every agent's episode in it, so the
    mean averages over agents' episodes and ``returns`` holds ``n_episodes`` entries per agent where every
    agent plays every episode once (an agent that joins late and never does has none; one that leaves and
    rejoins has one per stay). The episodes run at the
    agent's ``acting_threads`` (torch's count as its run trained), the caller's count put back after.
    """
    from canter.utils import agent_threads

    with agent_threads(agent):  # the run's torch_threads, not the caller's count (each predict's own switch skipped)
        return _evaluate(agent, env, n_episodes, seed, deterministic)


def _evaluate(agent: Agent, env: VecEnv, n_episodes: int, seed: int | None, deterministic: bool) -> EvalResult:
    """:func:`evaluate`, at whatever thread count the caller set."""
    n = env.num_envs
    copy_of = getattr(env, "copy_index", None)
    if copy_of is None:
        copy_of = getattr(getattr(env, "env", None), "copy_index", None)
    copy_of = np.arange(n) if copy_of is None else np.asarray(copy_of)
    copies = int(copy_of.max()) + 1
    per_copy = np.array([(n_episodes + c) // copies for c in range(copies)])
    # a multi-agent env's copies end their episodes (``ended``) when no agent is left in them: an agent's episodes
    # count while its copy's do (agents that join late or rejoin have none, or several, in one of the copy's)
    ended = getattr(getattr(env, "env", None), "ended", None) if n != copies else None
    done = np.zeros(copies, dtype=np.int64)  # the copies' finished episodes (with ``ended``)
    targets = per_copy[copy_of]
    counts = np.zeros(n, dtype=np.int64)
    returns: list[float] = []
    lengths: list[int] = []
    successes: list[float] = []
    begin = getattr(agent, "begin_episodes", None)  # a recurrent agent's memory starts empty each episode
    seed_random_policies(agent, seed)
    obs = env.reset(seed=seed)
    act, starts = eval_policy(agent, deterministic, seed), np.ones(n, dtype=bool)
    if begin is not None:
        begin(starts)
    while (counts < targets).any() if ended is None else (done < per_copy).any():
        step = env.step(act(obs, starts))
        if begin is not None:  # a recurrent agent (a multi-policy env's steps have no ``valid``)
            starts = ~step.valid  # a reset step's observation is a new episode's first
            begin(starts)
        success_of = getattr(env, "finished_success", None)  # envs that report no success have none
        if success_of is None or len(success_of) != len(env.finished_envs):
            success_of = np.full(len(env.finished_envs), np.nan)
        for i, ret, length, success in zip(env.finished_envs, env.finished_returns, env.finished_lengths, success_of):
            if (counts[i] < targets[i]) if ended is None else (done[copy_of[i]] < per_copy[copy_of[i]]):
                counts[i] += 1
                returns.append(float(ret))
                lengths.append(int(length))
                if success == success:  # not NaN: the env reported it
                    successes.append(float(success))
        if ended is not None:
            done += ended
        obs = step.obs
    if begin is not None:  # the caller's next predict starts from empty memory, not the last episode's
        begin(np.ones(n, dtype=bool))
        if not deterministic and getattr(agent, "explore", None) is not None:  # and so does its next explore
            begin_exploring(agent, begin, n)
    arr = np.asarray(returns, dtype=np.float64)
    return EvalResult(float(arr.mean()), float(arr.std()), returns, lengths, successes,
                      n_episodes=int(per_copy.sum()) if n != copies else None, deterministic=deterministic)


def run_deterministic(agent: Any) -> bool:
    """The run's ``eval_deterministic`` (``agent.run_config``): what its evaluations played, and so what
    ``canter eval``, ``canter play`` and :func:`evaluate_agent` play unless told; True for an agent without a run
    and for a run saved before the setting (whose evaluations were all deterministic)."""
    value = getattr(getattr(agent, "run_config", None), "eval_deterministic", True)
    return value if isinstance(value, bool) else True


def begin_exploring(agent: Any, begin: Any, n: int) -> None:
    """Zero the ``n`` rows of a recurrent agent's exploring memory: ``begin(starts, exploring=True)``. An override of
    ``begin_episodes`` written before that keyword (``def begin_episodes(self, starts, training=False)``) is not
    called with it (a TypeError): :class:`~canter.agents.RecurrentAgent`'s own zeroes that memory, which the
    override does not know of."""
    import inspect

    try:
        params = inspect.signature(begin).parameters.values()
    except (TypeError, ValueError):  # a callable without a signature to read: taken as the base class's
        params = None
    if params is None or any(p.name == "exploring" or p.kind is p.VAR_KEYWORD for p in params):
        begin(np.ones(n, dtype=bool), exploring=True)
        return
    from canter.agents.recurrent import RecurrentAgent

    if isinstance(agent, RecurrentAgent):
        RecurrentAgent.begin_episodes(agent, np.ones(n, dtype=bool), exploring=True)


def one_policy_hint(agent: Any) -> str:
    """For one policy of a multi-policy agent (``agent.agents["speaker"]``, which has no run of its own to act on),
    what to act with instead; ``""`` for other agents."""
    name = getattr(agent, "policy_name", None)
    if name is None:
        return ""
    alone = ("" if getattr(getattr(agent, "algorithm", None), "config", None) is None  # a random policy: no weights
             else f", or save this one alone (agent.agents['{name}'].save(path)) and canter.load it")
    return (f"this is policy '{name}' of a multi-policy agent, which acts with the others: evaluate or play that agent "
            f"(every policy of the run){alone}")


def check_episodes_and_seed(episodes: Any, seed: Any) -> None:
    """Refuse (:class:`~canter.errors.CanterError`, one line) an ``episodes`` that is not a whole number >= 1 or a
    ``seed`` outside 0 .. 2**32 - 1: the arguments of :func:`evaluate_agent` and :func:`canter.play.play`."""
    import numbers

    from canter.errors import CanterError

    # NumPy's integers and bools too (np.int64 from np.arange was "must be a whole number, got np.int64(3)")
    if isinstance(episodes, (bool, np.bool_)) or not isinstance(episodes, numbers.Integral) or episodes < 1:
        raise CanterError(f"episodes must be a whole number >= 1, got {episodes!r}")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**32:
        raise CanterError(f"seed must be a whole number between 0 and 2**32 - 1, got {seed!r}")


@keywords_checked("canter.evaluate", {
    "n_eval_episodes": "canter calls it 'episodes'",
    "return_episode_rewards": "the EvalResult it returns holds every episode's returns and lengths",
    "render": "canter play RUN_DIR --render shows the episodes"})
def evaluate_agent(agent: Any, env: str | None = None, episodes: int = 10, seed: int = 12345,
                   env_kwargs: dict[str, Any] | None = None, deterministic: bool | None = None) -> EvalResult:
    """``canter.evaluate``: ``episodes`` episodes of the policy of ``agent`` (one that
    ``canter.train``, ``canter.load`` or ``canter.make_agent`` returned, or a trainer's, in its loop or a callback), as ``canter eval`` runs
    them and Stable-Baselines3's
    ``evaluate_policy`` does. ``env``: another env id with the same spaces (default: the run's own, built
    with the run's ``env_kwargs``, its ``eval_env_kwargs`` merged over them, and its vectorization, as its
    evaluations in training); ``env_kwargs`` are merged over the run's. ``deterministic`` (SB3's keyword): True the
    deterministic policy, False the policy's samples, from a stream seeded with ``seed``; None (the default) as the
    run's evaluations played (its ``eval_deterministic``: true unless set, false in the Atari presets).
    Returns an :class:`EvalResult` (``mean_return``, ``std_return``, ``returns``, ``lengths``)."""
    from canter.envs.make import eval_env_kwargs, make_vec_env, run_vectorization
    from canter.errors import CanterError

    from canter.trainers.agent_metadata import agent_run_config

    run = agent_run_config(agent)  # a hand-built trainer's: the env it trains on
    if run is None:
        raise CanterError("evaluate takes an agent that canter.train, canter.load or canter.make_agent returned (it "
                          "carries its run's env); " + (one_policy_hint(agent) or "for another agent, call "
                                      "canter.trainers.evaluation.evaluate(agent, vec_env, episodes)"))
    check_episodes_and_seed(episodes, seed)
    if deterministic is None:
        deterministic = run_deterministic(agent)
    episodes, seed, deterministic = int(episodes), int(seed), bool_argument("deterministic", deterministic)
    if env is not None and (not isinstance(env, str) or not env.strip()):
        raise CanterError(f"env must be an env id (leave it out for the run's own), got {env!r}")
    if env_kwargs is not None and not isinstance(env_kwargs, dict):
        raise CanterError(f"env_kwargs must be a mapping, got {env_kwargs!r}")
    env_id = env or run.env
    from canter.envs.turns import check_given_opponent

    check_given_opponent(env_id, env_kwargs, "env_kwargs")  # else a random opponent, silently (canter eval's rule)
    own = env_id == run.env  # the run's env as the run built it; another id: its own defaults
    from canter.envs.opponents import run_env_kwargs

    # its evaluations' env, playing the run's copies of its frozen opponents (unless env_kwargs name another)
    kwargs = run_env_kwargs(env_id, eval_env_kwargs(run) if own else {}, env_kwargs, getattr(agent, "run_dir", None))
    vectorization = run_vectorization(run, env_id, kwargs)
    from canter.envs.multiagent import trained_policies

    with trained_policies():  # a policy mode that does not fit: no --set policies for a trained agent
        vec = make_vec_env(env_id, min(episodes, run.eval_envs), vectorization, kwargs, policies=run.policies,
                           central_state=run.central_state)
    try:
        from canter.envs.spaces import check_agent_spaces

        check_agent_spaces(agent, env_id, vec.single_observation_space, vec.single_action_space)
        return evaluate(agent, vec, episodes, seed=seed, deterministic=deterministic)
    finally:
        vec.close()
