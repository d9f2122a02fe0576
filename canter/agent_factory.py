"""Building a run's agent: Model -> Algorithm -> Agent for its spaces, one policy or several
(:func:`make_agent`, re-exported by :mod:`canter.api`)."""
from __future__ import annotations

from dataclasses import is_dataclass
from typing import Any

import torch

from canter.agents.agent import Agent
from canter.agents.multi import MultiPolicyAgent
from canter.agents.recurrent import check_agent_fits
from canter.algorithms.base import threads_for, widest_layer
from canter.algorithms.seeding import seeded_by_caller
from canter.config import RunConfig, resolved_dict
from canter.errors import CanterError, build_user_class, keywords_checked, unknown
from canter.models.cnn import count_conv_encoders, set_conv_precision
from canter.registry import lookup
from canter.utils import seed_everything


#: what a call of make_agent that is not (RunConfig, algorithm config, observation space, action space) is told
_HOW = ("canter.make_agent(run, algo_cfg, observation_space, action_space) takes the RunConfig and algorithm config "
        "that canter.config.resolve_config(ALGO, ENV) returns, and the env's spaces; for an untrained agent of an "
        "algorithm on an env (Stable-Baselines3's PPO('MlpPolicy', env)): canter.make_trainer('ppo', 'CartPole-v1').agent")


@keywords_checked("canter.make_agent", positional=_HOW)
def make_agent(run: RunConfig, algo_cfg: Any, observation_space: Any, action_space: Any) -> Agent | MultiPolicyAgent:
    """Build Model -> Algorithm -> Agent for the given spaces (seeded by ``run.seed``).

    Torch's thread count is fixed first: initialisation results depend on it, and the same
    seed must give the same run whatever the caller's thread setting was. With several policies
    (``run.policies`` not ``shared``) the spaces are dicts policy -> space, and the result is a
    :class:`~canter.agents.multi.MultiPolicyAgent` (policy ``i`` seeded with ``run.seed + i``).
    Anything else than a ``RunConfig`` and an algorithm config (``canter.make_agent("ppo", "CartPole-v1")``, SB3's
    ``PPO("MlpPolicy", env)``) is a one-line :class:`CanterError` saying what to call (it was an AttributeError).
    The agent carries ``run_config`` (``canter.evaluate`` plays the run's env) and ``made_config`` (the resolved
    config ``agent.save`` writes, at step 0, so that ``canter.load`` reads it back) until a trainer trains it.
    """
    agent = _make_agent(run, algo_cfg, observation_space, action_space)
    agent.run_config, agent.made_config = run, resolved_dict(run, algo_cfg)  # as the SB3 user's model.save expects
    return agent


def _make_agent(run: RunConfig, algo_cfg: Any, observation_space: Any, action_space: Any) -> Agent | MultiPolicyAgent:
    """:func:`make_agent`'s build, its arguments checked."""
    if not isinstance(run, RunConfig):
        raise CanterError(f"make_agent's first argument is a RunConfig, got {run!r:.60}; {_HOW}")
    if not is_dataclass(algo_cfg) or isinstance(algo_cfg, type):
        raise CanterError(f"make_agent's second argument is the algorithm's config, got {algo_cfg!r:.60}; {_HOW}")
    if run.policies in ("type", "agent"):
        from canter.agents.fixed import RANDOM, RandomPolicy
        from canter.multiagent_config import fixed_policies, policy_config, policy_run

        policies = list(observation_space.spaces)
        for name in run.policy_hparams:
            if name not in policies:
                kind = "agent" if run.policies == "agent" else "agent type"  # not names 'canter list' shows
                raise unknown("policy in policy_hparams", name, policies,
                              see=f"the policies are the env's {kind}s: {', '.join(policies[:3])}, ...")
        fixed = fixed_policies(run, policies)  # a random policy has no Agent of an algorithm
        group = MultiPolicyAgent({  # a random policy under central_state acts on its agents' own rows
            p: RandomPolicy(space, action_space[p], run.seed + i, run.central_state) if fixed[p] == RANDOM
            else _make_single_agent(policy_run(run, p, run.seed + i), policy_config(run, algo_cfg, p), space,
                                    action_space[p])
            for i, (p, space) in enumerate(observation_space.spaces.items())})
        _check_conv_precision(run, group.algorithm.modules().values())
        return group
    agent = _make_single_agent(run, algo_cfg, observation_space, action_space)
    _check_conv_precision(run, agent.algorithm.modules().values())
    return agent


def _check_conv_precision(run: RunConfig, modules: Any) -> None:
    """Refuse ``conv_precision`` other than float32 when no network of the run has a convolutional encoder."""
    if run.conv_precision != "float32" and not count_conv_encoders(modules):
        raise CanterError(f"conv_precision={run.conv_precision} applies to convolutional encoders (image "
                          f"observations); this run's networks have none (use conv_precision=float32)")


def _make_single_agent(run: RunConfig, algo_cfg: Any, observation_space: Any, action_space: Any) -> Agent:
    """:func:`make_agent` for one policy."""
    threads = run.torch_threads or threads_for(widest_layer(algo_cfg))
    torch.set_num_threads(threads)
    seed_everything(run.seed)
    algo_cls = lookup("algorithm", run.algo)
    with seeded_by_caller():  # weights from the streams seeded above, left where the initialisation took them
        algorithm = build_user_class(
            "algorithm", algo_cls, "an Algorithm subclass's __init__ takes (observation_space, action_space, config) "
            "and the keyword arguments model, seed and device", observation_space, action_space, algo_cfg,
            model=run.model, seed=run.seed, device=run.device)
    set_conv_precision(algorithm.modules().values(), run.conv_precision)
    if algo_cls.__module__.split(".")[0] != "canter" and unsaved_parts(algorithm):  # a user's: its state lost
        from canter.errors import CanterWarning, warn

        warn(CanterWarning(f"algorithm {algo_cls.__module__}:{algo_cls.__qualname__} holds "
                           f"{', '.join(unsaved_parts(algorithm))}, which its modules() and optimizers() do not return: "
                           f"checkpoints, canter.load and --resume do not save or restore them (return them there)"))
    agent_name = run.agent or getattr(algo_cls, "agent_class", None)  # recurrent_ppo: its RecurrentAgent
    agent_cls = lookup("agent", agent_name) if agent_name else Agent
    check_agent_fits(algo_cls, agent_cls, agent_name or "agent")
    agent = build_user_class(
        "agent", agent_cls, "an Agent subclass's __init__ takes Agent's keyword arguments normalize_obs, "
        "normalize_reward, gamma and n_envs", algorithm, normalize_obs=getattr(algo_cfg, "normalize_obs", False),
        normalize_reward=getattr(algo_cfg, "normalize_reward", False), gamma=getattr(algo_cfg, "gamma", 0.99),
        n_envs=run.n_envs or 1)
    if not isinstance(agent, Agent):  # a registered factory function's result ('NoneType' has no 'torch_threads')
        raise CanterError(f"the agent '{agent_name}' built {type(agent).__name__}, not an agent (an instance of "
                          f"canter.agents.agent.Agent): a registered agent factory must return one")
    agent.torch_threads = threads
    return agent


def unsaved_parts(algorithm: Any) -> list[str]:
    """The attributes of ``algorithm`` that hold a torch module with parameters or a torch optimizer which its
    ``modules()`` and ``optimizers()`` (what a checkpoint saves) do not return, each as ``'self.NAME'``: a user's
    algorithm that added a network of its own (an auxiliary head) lost its weights on every load and resume."""
    saved = {id(p) for m in algorithm.modules().values() for p in m.parameters()}
    optimizers = [id(o) for o in algorithm.optimizers().values()]
    out = []
    for name, value in vars(algorithm).items():
        if (isinstance(value, torch.nn.Module) and any(id(p) not in saved for p in value.parameters())) or (
                isinstance(value, torch.optim.Optimizer) and id(value) not in optimizers):
            out.append(f"self.{name}")
    return out
