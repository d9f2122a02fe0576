"""Learner and Explorers: one process, or explorer actors on a Ray cluster (``--explorers N``).

Importing this package does not import Ray; only a run with explorers does (see
``docs/distributed.md``). :func:`make_distributed_trainer` picks the driver from the
algorithm's family: ``on_policy`` -> synchronous, ``async`` (IMPALA, APPO) -> asynchronous with
V-trace, ``off_policy`` -> Ape-X style.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from canter.errors import CanterError


def make_distributed_trainer(
    run: Any, algo_cfg: Any, env: Any, eval_env: Any, callbacks: list[Any] | None = None,
    env_kwargs: dict[str, Any] | None = None,
) -> Any:
    """Build the learner for ``run``: explorers on Ray when ``run.explorers > 0``, else in-process.

    ``env`` is the training env the caller made: the in-process explorer uses it; with Ray
    explorers it only told us the spaces and is closed here (each explorer makes its own).
    ``callbacks`` are the run's hooks, as for a single-process trainer.
    """
    from canter.api import make_agent
    from canter.distributed.trainers import ApeXTrainer, AsyncTrainer, SyncTrainer
    from canter.registry import lookup

    algo_cls = lookup("algorithm", run.algo)
    drivers = {"on_policy": SyncTrainer, "async": AsyncTrainer, "off_policy": ApeXTrainer}
    driver = drivers.get(algo_cls.family)
    if driver is None:
        raise CanterError(f"{algo_cls.name} ({algo_cls.family}) cannot run on explorers; "
                          f"explorers run these families: {', '.join(drivers)}")
    if not run.explorers and algo_cls.family != "async":
        raise CanterError(f"{algo_cls.name} runs in one process without explorers; pass --explorers N for Ray")
    if run.explorers:
        refuse_main_names(run, algo_cfg)
    obs_space, act_space = env.single_observation_space, env.single_action_space
    # every sub-env of the run (a multi-agent env has one per agent of each copy): ``env`` holds one copy
    # per explorer with Ray, all the run's copies in-process
    total_envs = env.num_envs * (run.n_envs * run.explorers if run.explorers else 1)
    agent = make_agent(dataclasses.replace(run, n_envs=total_envs), algo_cfg, obs_space, act_space)
    if run.explorers:
        from canter.config import resolved_dict
        from canter.distributed.pool import RayPool
        from canter.registry import user_modules

        # explorers are fresh processes: they import the modules that registered the run's names here
        # (its ``imports``, and those a script imported), as loading a checkpoint does; they act on the CPU
        # whatever the learner's device (their weights come as NumPy arrays; a node may have no GPU)
        # (``env_kwargs``: the run's, playing a turn-based game's frozen opponents from the run's copies of them)
        explorer_run = dataclasses.replace(run, imports=user_modules(resolved_dict(run, algo_cfg)), device="cpu",
                                           env_kwargs=run.env_kwargs if env_kwargs is None else env_kwargs)
        # ``env`` was made with one copy: its sub-envs per copy (a multi-agent env's agents)
        pool: Any = RayPool(explorer_run, algo_cfg, run.explorers, run.ray_address, rows_per_copy=env.num_envs,
                            copy_labels=getattr(env, "row_labels", None), spaces=(obs_space, act_space))
        env.close()
    else:
        from canter.distributed.explorer import Explorer
        from canter.distributed.pool import LocalPool
        from canter.envs.turns import bind_opponents

        bind_opponents(env, agent, run.env, run.env_kwargs)  # a turn-based game's opponent: self
        pool = LocalPool(Explorer(agent, env, seed=run.seed, per_explorer_exploration=False))
    try:
        return driver(agent, pool, eval_env, run, callbacks=callbacks or [])
    except BaseException:  # (a callback without hook methods): Ray and the explorers are not left running
        pool.close()
        raise


def refuse_main_names(run: Any, algo_cfg: Any) -> None:
    """Refuse, before Ray starts, a run with explorers whose env, algorithm, model, agent or encoder is
    registered in ``__main__`` (a script, a notebook): an explorer is a fresh process that cannot import
    ``__main__``, and each one failed at its start ("unknown env id ...; did you mean ...") once Ray was up."""
    from canter.config import resolved_dict
    from canter.registry import main_registered

    names = main_registered(resolved_dict(run, algo_cfg))
    if names:
        kind, name = names[0]
        where = (f"--env my_pkg.envs:{name} or 'imports: [my_pkg.envs]'" if kind == "env"
                 else "'imports: [my_pkg.parts]' or module:Class")
        raise CanterError(f"{kind} '{name}' is registered in __main__ (a script or notebook), which Ray explorers "
                          f"cannot import: register it in a module of its own and name that module ({where}), "
                          f"or train without --explorers")


__all__ = ["make_distributed_trainer", "refuse_main_names"]
