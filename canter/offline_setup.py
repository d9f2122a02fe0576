"""An offline run's trainer (``dataset``: BC, CQL, TD3+BC, ...), checked against the env its data came from."""
from __future__ import annotations

from typing import Any

from canter.config import RunConfig
from canter.config_errors import online_dataset_error
from canter.envs.make import make_eval_env
from canter.errors import CanterError, CanterWarning, warn


def offline_trainer(run: RunConfig, algo_cfg: Any, algo_cls: Any, callbacks: list[Any],
                    snapshots: dict[str, str] | None = None) -> Any:
    """An :class:`~canter.trainers.OfflineTrainer` on ``run.dataset``, checked against the run's env (a turn-based
    game's evaluations playing the run's opponent ``snapshots``, :mod:`canter.envs.opponents`)."""
    from canter.api import make_agent
    from canter.data.dataset import TransitionDataset
    from canter.envs import spaces_mismatch
    from canter.envs.make import same_env_id
    from canter.trainers import OfflineTrainer

    if algo_cls.family != "offline":
        raise online_dataset_error(run.algo)
    if run.dataset is None:
        raise CanterError(f"{run.algo} learns from a dataset: pass --dataset PATH "
                          f"(write one with: canter collect RUN_DIR --out PATH)")
    if run.explorers:
        raise CanterError(f"{run.algo} learns from a dataset and takes no explorers; drop --explorers")
    if run.n_envs != 1:  # nothing to vectorise: taken without a word, and recorded in config.yaml
        warn(CanterWarning(f"n_envs sets the training envs; {run.algo} learns from a dataset and steps none "
                           f"(evaluation runs eval_envs copies), so this run ignores n_envs={run.n_envs}"))
    if run.monitor == "rolling" and (run.early_stopping or run.plateau_patience):
        raise CanterError("an offline run plays no training episodes, so there is no rolling return to monitor: "
                          "set monitor=eval")
    data = TransitionDataset.load(run.dataset)
    if not same_env_id(data.env_id, run.env):  # 'module:EnvId' names the dataset's EnvId, registered by module
        raise CanterError(f"dataset '{run.dataset}' was collected on {data.env_id}, not {run.env}; "
                          f"pass --env {data.env_id} (or leave --env out)")
    if data.env_kwargs and not run.env_kwargs:  # evaluate on the env the data came from
        run.env_kwargs = dict(data.env_kwargs)
    elif run.env_kwargs and run.env_kwargs != data.env_kwargs:  # also kwargs the data was not collected with
        raise CanterError(f"dataset '{run.dataset}' was collected with env_kwargs {data.env_kwargs}, not "
                          f"{run.env_kwargs}; leave env_kwargs out to evaluate on the data's env, or change only the "
                          f"evaluation env with eval_env_kwargs (--eval-env-kwargs)")
    # made for its spaces where eval_episodes is 0 (no evaluations), then closed
    eval_env = make_eval_env(run, max(1, min(run.eval_envs, run.eval_episodes)), None, snapshots)  # with its eval_env_kwargs
    try:
        obs_space, act_space = eval_env.single_observation_space, eval_env.single_action_space
        mismatch = spaces_mismatch((data.observation_space, data.action_space), (obs_space, act_space), "holds",
                                   run.env)
        if mismatch is not None:  # with the bound that differs where the descriptions are the same
            raise CanterError(f"dataset '{run.dataset}' {mismatch}")
        algo_cls.check_spaces(obs_space, act_space)
        agent = make_agent(run, algo_cfg, obs_space, act_space)
    except BaseException:
        eval_env.close()
        raise
    if not run.eval_episodes:
        eval_env.close()
    return OfflineTrainer(agent, data, eval_env if run.eval_episodes else None, run, callbacks=callbacks)
