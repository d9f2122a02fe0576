"""The Python API: ``make_trainer``, ``train``, ``resume``, ``load``, ``make_agent``."""
from __future__ import annotations

import difflib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import torch

from canter.agents.agent import Agent
from canter.agents.multi import MultiPolicyAgent
from canter.callbacks import as_callbacks, config_callbacks
from canter.checkpoint import (  # noqa: F401 (find_checkpoint re-exported)
    checkpoint_present, checkpoint_space, find_checkpoint, load_checkpoint, no_run_dir, run_dir_hint)
from canter.config_errors import EMPTY_STRING_FIX, check_empty_string, check_positions, misspelled_argument
from canter.config import RunConfig, build, build_saved_hparams, resolve_config, resolved_dict
from canter.devices import check_resume_device, load_device
from canter.config_imports import config_algo, import_config_imports
from canter.config_layers import set_list
from canter.config_unused import warn_unused_settings
from canter.preset_target import warn_preset_target
from canter.envs import make_vec_env, spaces_match
from canter.envs.spaces import joint_alive_mask_note
from canter.envs.spaces import read_alike
from canter.envs.make import given_image_layout, make_eval_env, warn_env_of_main
from canter.envs.opponents import Snapshots, frozen_specs, read_index, run_snapshots, with_snapshots
from canter.logging.defaults import default_loggers
from canter.envs.turns import bind_opponents, opponent_ids
from canter.checkpoint_finite import refuse_nonfinite, warn_nonfinite
from canter.errors import CanterError, CanterWarning, warn, bool_argument, keywords_checked
from canter.init_from import check_source, init_agent
from canter.logging.history import check_history
from canter.multiagent_config import check_saved_policy_hparams
from canter.registry import import_user_modules, lookup
from canter.resume_checks import (
    as_numbers_now, check_config_unedited, check_env_layout_kept, check_given_layout_kept, check_image_layout_kept,
    check_opponents, check_resume_metadata, check_same_run, check_writable, keep_best_on_disk, resume_dataset,
)
from canter.resume_settings import (
    SAVED, check_address_has_explorers, check_continues, check_keep_has_checkpoints, check_settings, resumed_metadata)
from canter.build_checks import (check_spaces, warn_idle_patience,  # noqa: F401 (check_spaces: re-exported)
                                 warn_self_normalising_env)
from canter.run import Run, run_metadata
from canter.run_dirs import check_new_run_dir, new_run_dir, nothing_to_resume, outermost_missing
from canter.run_lock import check_free
from canter.utils import global_rngs_kept, threads_kept
from canter.trainers import TRAINERS, Trainer
from canter.trainers.fixed import member_classes
from canter.agent_factory import make_agent  # noqa: F401 (re-exported: canter.api.make_agent)


#: what a call of make_trainer or train with more than the algorithm and the env as positional arguments is told
_KEYWORDS = "the other arguments are keywords: canter.train('ppo', 'CartPole-v1', max_steps=10_000)"
#: make_trainer's (and train's) own keyword arguments, besides the run keys and hyperparameters it takes
_ARGUMENTS = ["config_file", "sets", "run_dir", "quiet", "hparams", "callbacks", "hooks"]


#: set while ``canter train`` builds its trainer: its flags' values are the command line's text, where None is null
_COMMAND_LINE: ContextVar[bool] = ContextVar("canter_command_line", default=False)


@contextmanager
def command_line_values() -> Iterator[None]:
    """:func:`make_trainer` called inside takes its keyword arguments from ``canter train``'s flags: a refused None
    among them is named null, the word typed (``--net-arch [64,null]``), not None as Python's arguments' is; and
    :func:`resume_trainer`'s from ``--resume``'s options, which its errors name (``--max-steps``, not ``max_steps=``)."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


@keywords_checked("canter.make_trainer", positional=_KEYWORDS)
def make_trainer(
    algo: str | None = None, env: str | None = None, *, config_file: str | Path | None = None,
    sets: list[str] | str | None = (), run_dir: str | Path | None = None, quiet: bool = True,
    hparams: dict[str, Any] | None = None, callbacks: list[Any] | None = None, hooks: dict[str, Any] | None = None,
    **overrides: Any,
) -> Trainer | Run:
    """Build a trainer; ``for record in make_trainer(...)(): ...`` runs it.

    ``algo`` None is the ``algo`` of ``config_file`` (a run's ``config.yaml`` names it), else ``"ppo"``.

    ``overrides`` are run-config keys (``seed``, ``n_envs``, ``max_steps``, ``target_reward``,
    ...) or hyperparameter names (``lr=1e-3``); ``sets`` are ``--set`` strings ``"key=value"`` (a
    list, or one alone; None is none). With ``run_dir`` the trainer is wrapped in a
    :class:`~canter.run.Run` that writes the run directory (``run_dir="auto"`` picks
    ``runs/<algo>-<env>-<time>-<sha>``); without it nothing is written (``wandb`` and ``record_every``, which
    only a run directory's loggers take, are refused in one line). ``callbacks`` are
    :class:`~canter.callbacks.Callback` objects and ``hooks`` maps hook names to callables (see
    :mod:`canter.callbacks`); they come after those named in the config. ``quiet=False`` adds the
    console progress to a run directory's loggers (without ``run_dir`` the records are yours to show).
    """
    quiet = bool_argument("quiet", quiet)  # 'no' was truthy (quiet), None falsy (the console shown)
    sets = set_list(sets)  # one "key=value" is one item (not one per character); None is none
    if hparams is not None and not isinstance(hparams, dict):
        raise CanterError(f"hparams must be a dict of hyperparameter name -> value, got {hparams!r}")
    for name, path in (("run_dir", run_dir), ("config_file", config_file)):
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise CanterError(f"{name} must be a path (a str or pathlib.Path), got {path!r}")
    if algo is None:
        algo = config_algo(config_file) or "ppo"
    hp_over = dict(hparams or {})
    run_over: dict[str, Any] = {}
    run_keys = set(RunConfig.__dataclass_fields__)
    if isinstance(algo, str):
        import_config_imports(config_file, overrides, sets)  # they may register ``algo``, looked up next
        check_positions(algo, env)
    hp_keys = set(lookup("algorithm", algo).Config.__dataclass_fields__) if isinstance(algo, str) else set()
    for kind in ("model", "agent"):
        if isinstance(overrides.get(kind), type):  # model=MyModel: lookup's error names what to pass instead
            lookup(kind, overrides[kind])
    if isinstance(overrides.get("device"), torch.device):  # SB3's device=th.device("cuda"), as canter.load takes it
        overrides["device"] = str(overrides["device"])
    for k in overrides:
        misspelled_argument(k, _ARGUMENTS, run_keys, hp_keys, "canter.train (make_trainer)", overrides[k])
    for k, v in overrides.items():
        # neither kind (a typo): a top-level key, so the error offers the closest run key or hyperparameter
        (hp_over if k in hp_keys and k not in run_keys else run_over)[k] = v
    try:
        run, algo_cfg = resolve_config(algo, env, config_file, list(sets), hparams=hp_over,
                                       from_python=not _COMMAND_LINE.get(), **run_over)
    except CanterError as exc:  # env_name='CartPole-v1': 'no environment given' named no keyword
        strange = [k for k in run_over if k not in run_keys and not k.startswith("hparams.")]
        if env is None and strange and str(exc).startswith("no environment given"):
            near = difflib.get_close_matches(strange[0], [*run_keys, *hp_keys], n=1, cutoff=0.8)  # a key mistyped
            meant = f" (did you mean '{near[0]}'?)" if near and near[0] != "env" else ""
            raise CanterError(f"no environment given, and canter.train (make_trainer) has no argument '{strange[0]}'"
                              f"{meant}; the env id is env=, as in canter.train('ppo', env='CartPole-v1')") from None
        raise
    unused = [k for k, on in (("wandb", run.wandb), ("record_every", run.record_every)) if on]
    if run_dir is None and unused:  # written only with a run directory, as tune's trials refuse them
        raise CanterError(f"'{unused[0]}' applies to a run directory, and run_dir=None writes none: drop it, or pass "
                          f"run_dir (a path, or \"auto\" for runs/<algo>-<env>-<time>)")
    if run.init_from is not None:  # its algorithm before the build, whose warnings would come before the error
        check_source(run.init_from, run.algo, run)
    snapshots = None
    if run_dir is not None:
        run_dir = new_run_dir(run.algo, run.env) if str(run_dir) == "auto" else check_new_run_dir(run_dir)
        specs = frozen_specs(run.env, run.env_kwargs, run.eval_env_kwargs)  # copied now: the run plays them as they are
        snapshots = Snapshots(specs) if specs else None
    with threads_kept():  # building seeds and sets them for the initial weights; training sets them again
        built = _build(run, algo_cfg, run_dir, quiet, as_callbacks(callbacks, hooks), snapshots=snapshots)
    (built.trainer if isinstance(built, Run) else built).resolved_config = resolved_dict(run, algo_cfg)
    if run.init_from is not None:  # a new run only: a resumed one has its own weights (resume_trainer)
        init_agent(built, run.init_from)
    warn_preset_target(run)  # built: a bad input's error came alone
    return built


def _build(run: RunConfig, algo_cfg: Any, run_dir: str | Path | None, quiet: bool, callbacks: list[Any],
           resumed: dict[str, Any] | None = None, snapshots: Snapshots | None = None) -> Trainer | Run:
    """The trainer of ``run`` (a :class:`Run` writing ``run_dir`` where given). Its envs play the frozen opponents of
    a turn-based game from ``snapshots`` (a new run's, staged) or a resumed run's own (canter.envs.opponents)."""
    callbacks = config_callbacks(run.callbacks, run.hooks) + callbacks
    files = snapshots.files() if snapshots else run_snapshots(run_dir) if resumed is not None else {}
    algo_cls = lookup("algorithm", run.algo)
    if run.max_policy_lag is not None and not (run.explorers and algo_cls.family == "async"):
        warn(CanterWarning(
            f"max_policy_lag applies only to asynchronous algorithms (impala, appo) with --explorers; "
            f"this {run.algo} run{'' if run.explorers else ' without explorers'} ignores it"
        ))
    if run.explorer_timeout is not None and not run.explorers:  # (IMPALA/APPO's in-process explorer cannot be killed)
        warn(CanterWarning(
            f"explorer_timeout applies only to runs with --explorers (Ray explorers); this {run.algo} run ignores it"
        ))
    if resumed is None:  # (a resumed run was warned when it started)
        warn_unused_settings(run)
    if algo_cls.family == "offline" or run.dataset is not None:
        if resumed is None:  # a resumed run's patience counts its earlier evaluations, and a longer budget adds one
            warn_idle_patience(run)
        from canter.offline_setup import offline_trainer

        trainer: Trainer = offline_trainer(run, algo_cfg, algo_cls, callbacks, files)
        return trainer if run_dir is None else _with_run_dir(trainer, run, algo_cfg, run_dir, quiet, resumed, snapshots)
    # with explorers, each explorer makes its own envs; this one only tells the spaces
    env_kwargs = with_snapshots(run.env_kwargs, files)  # what the envs are made with (config.yaml: run.env_kwargs)
    envs = make_vec_env(run.env, 1 if run.explorers else run.n_envs, run.vectorization, env_kwargs, training=True,
                        policies=run.policies, central_state=run.central_state)
    if resumed is None:  # an on-policy iteration is a whole rollout (ACER's a segment, IMPALA's / APPO's in one
        # process a rollout too): evaluations come at their ends
        rollouts = algo_cls.family in ("on_policy", "on_policy_recurrent", "on_policy_replay", "async") \
            and not run.explorers and run.policies not in ("type", "agent")
        # (an off-policy one evaluates between training phases of train_freq env steps: whole vector steps)
        phases = algo_cls.family == "off_policy" and not run.explorers and run.policies not in ("type", "agent") \
            and getattr(algo_cfg, "train_freq_unit", "step") == "step" and hasattr(algo_cfg, "train_freq")
        warn_idle_patience(run, (algo_cfg.n_steps, envs.num_envs) if rollouts else None,
                           (algo_cfg.train_freq, envs.num_envs) if phases else None)
    try:
        check_spaces(algo_cls, envs.single_observation_space, envs.single_action_space, run)
        if resumed is None and algo_cls.family == "on_policy_replay" and not run.explorers \
                and run.policies not in ("type", "agent"):  # (several policies: refused below, for that)
            from canter.trainers.on_policy_replay import check_segment_buffer

            check_segment_buffer(algo_cfg, envs.num_envs, run)
        eval_env = make_eval_env(run, min(run.eval_envs, run.eval_episodes), (
            envs.single_observation_space, envs.single_action_space), files) if run.eval_episodes else None
        if eval_env is not None and resumed is None:
            warn_self_normalising_env(run, eval_env)
        if not run.eval_episodes and run.eval_env_kwargs:  # canter eval and videos use them: a typo is refused now
            make_eval_env(run, 1, (envs.single_observation_space, envs.single_action_space), files).close()
    except BaseException:
        envs.close()
        raise
    if run.policies in ("type", "agent"):  # several policies
        from canter.trainers.multi_policy import MultiPolicyTrainer

        try:
            agent = make_agent(run, algo_cfg, envs.single_observation_space, envs.single_action_space)
            trainer = MultiPolicyTrainer(agent, envs, eval_env, run, member_classes(run, agent, TRAINERS), callbacks)
        except BaseException:
            _close(envs, eval_env)
            raise
        return trainer if run_dir is None else _with_run_dir(trainer, run, algo_cfg, run_dir, quiet, resumed, snapshots)
    if run.explorers or algo_cls.family not in TRAINERS:
        from canter.distributed import make_distributed_trainer  # imports Ray only with explorers

        try:
            trainer = make_distributed_trainer(run, algo_cfg, envs, eval_env, callbacks, env_kwargs)
        except BaseException:
            _close(envs, eval_env)
            raise
    else:
        try:
            agent = make_agent(run, algo_cfg, envs.single_observation_space, envs.single_action_space)
            bind_opponents(envs, agent, run.env, run.env_kwargs)  # a turn-based game's opponent: self
        except BaseException:
            _close(envs, eval_env)
            raise
        trainer = TRAINERS[algo_cls.family](agent, envs, eval_env, run, callbacks=callbacks)
    trainer.opponents = opponent_ids(run.env, env_kwargs)  # as the envs just loaded them; --resume checks them
    if run_dir is None:
        return trainer
    return _with_run_dir(trainer, run, algo_cfg, run_dir, quiet, resumed, snapshots)


def _with_run_dir(trainer: Trainer, run: RunConfig, algo_cfg: Any, run_dir: str | Path, quiet: bool,
                  resumed: dict[str, Any] | None, snapshots: Snapshots | None = None) -> Run:
    """Wrap ``trainer`` in a :class:`Run` writing ``run_dir`` (closing the trainer if that fails), which writes a new
    run's opponent ``snapshots`` when it starts."""
    warn_env_of_main(run.env)  # the run trains, but later commands would not find its env
    config = resolved_dict(run, algo_cfg)
    made_dir = outermost_missing(run_dir)  # before the run starts: its start makes the directory
    try:
        # the seeded global streams are kept: rich's import drew from Python's random (a quiet run's differed);
        # resumed: a run that logged to W&B already (one a resume turns W&B on for was given --wandb: a new run's)
        with global_rngs_kept():
            loggers = default_loggers(run, config, run_dir, quiet, snapshots.files() if snapshots else None,
                                      resumed=resumed is not None and bool((resumed.get("config") or {}).get("wandb")))
    except BaseException as exc:
        trainer.close()
        if isinstance(exc, OSError) and exc.filename is not None:
            raise CanterError(f"cannot write the run directory '{run_dir}': {exc.strerror or exc}") from None
        raise
    wrapped = Run(trainer, run_dir, config, loggers, run.checkpoint_every, resumed=resumed)
    wrapped.made_dir, wrapped.snapshots = made_dir, snapshots
    wrapped.opponent_snapshots = {spec: f"opponents/{e['file']}" for spec, e in  # for summary.json
                                  (snapshots.index if snapshots else read_index(run_dir)).items()}
    return wrapped


def _close(*envs: Any) -> None:
    """Close each of ``envs`` that is there (the eval env is None where eval_episodes is 0)."""
    for env in envs:
        if env is not None:
            env.close()


@keywords_checked("canter.train", positional=_KEYWORDS)
def train(algo: str | None = None, env: str | None = None, *, run_dir: str | Path | None = "auto", quiet: bool = True,
          **kwargs: Any) -> Agent | MultiPolicyAgent:
    """Train and return the agent (a :class:`~canter.agents.multi.MultiPolicyAgent` for a run with several policies,
    ``policies: type`` or ``agent``). Same arguments as :func:`make_trainer`; writes ``run_dir``
    (``"auto"``: a new directory under ``runs/``; ``None``: nothing). ``quiet=False`` shows the
    progress on stderr, as ``canter train`` does, with or without a run directory.

    The caller's global random states and thread counts (torch's, NumPy's BLAS) are as they were
    when it returns; training seeds and sets them for its own use. The agent carries
    ``run_config``, ``metadata`` (what its checkpoint's JSON would say) and ``run_dir``, as a
    loaded one does.
    """
    with global_rngs_kept(), threads_kept():
        trainer = make_trainer(algo, env, run_dir=run_dir, quiet=quiet, **kwargs)
        console = None
        try:
            if not quiet and not isinstance(trainer, Run):  # a Run has its console among its loggers
                from canter.logging.console import ConsoleLogger

                console = ConsoleLogger(trainer.run.max_steps, f"{trainer.run.algo} {trainer.run.env}")
                console.start(trainer)
            for record in trainer():
                if console is not None:
                    console.log(record)
        finally:
            if console is not None:
                console.close()
            trainer.close()
    return _trained_agent(trainer)


def _trained_agent(trainer: Trainer | Run) -> Agent | MultiPolicyAgent:
    """The agent of a finished trainer or run, with the attributes :func:`load` gives an agent."""
    inner = trainer.trainer if isinstance(trainer, Run) else trainer
    agent = inner.agent
    agent.run_config = inner.run
    agent.metadata = trainer.metadata() if isinstance(trainer, Run) else run_metadata(inner, inner.resolved_config)
    agent.run_dir, agent.trainer_ref = getattr(trainer, "dir", None), None  # metadata fixed: saved as it is
    agent.run_metadata_snapshot = None
    return agent


def load_agent_state(agent: Agent, state: dict[str, Any], base: Path, weights_only: bool = False) -> None:
    """``agent.load_state_dict(state["agent"])``, or a one-line :class:`CanterError` naming the
    checkpoint when its tensors do not fit the model its config describes (another canter's
    architecture: torch's own message lists every missing and unexpected key on many lines)."""
    try:
        agent.load_state_dict(state["agent"], weights_only=weights_only)
    except (KeyError, RuntimeError, ValueError, TypeError) as exc:
        detail = " ".join(str(exc).split())
        if len(detail) > 300:
            detail = detail[:297] + "..."
        users = sorted({f"{type(m).__module__}:{type(m).__qualname__}" for module in agent.algorithm.modules().values()
                        for m in module.modules() if type(m).__module__.split(".")[0] not in ("canter", "torch")})
        why = (f"did {', '.join(users)}, of your code, change since it was trained?" if users else
               "saved by another canter version?")
        raise CanterError(f"checkpoint {base} does not fit the model its config describes ({why}): {detail}") from None


@keywords_checked("canter.api.resume_trainer", positional="max_steps and the rest are keywords (max_steps=N)")
def resume_trainer(
    run_dir: str | Path, *, quiet: bool = True, max_steps: int | None = None, max_seconds: float | None = SAVED,
    callbacks: list[Any] | None = None, hooks: dict[str, Any] | None = None, dataset: str | Path | None = None,
    **settings: Any,
) -> Run:
    """Rebuild the :class:`~canter.run.Run` of ``run_dir`` from its ``last`` checkpoint, ready to continue.

    Models, optimizers, normalisation statistics, every RNG, the envs' state, counters, callbacks'
    state and (off-policy) the replay buffer are restored, and the history files are trimmed to
    the rows the checkpoint had, so the continuation equals an uninterrupted run. ``max_steps`` /
    ``max_seconds`` extend a finished run; ``max_seconds=None`` drops its time budget (not given: kept).
    Python ``callbacks``/``hooks`` must be given again.
    ``dataset``: an offline run's dataset at a new path (moved or copied), checked to be the same data.
    ``settings``: new values of the run settings that change no learning (:data:`canter.resume_settings.CHANGEABLE`:
    ``keep_checkpoints``, ``checkpoint_every``, ``wandb``, ``explorer_timeout``, ``ray_address``), kept by the run's config from then on.
    """
    if not isinstance(run_dir, (str, os.PathLike)):
        raise CanterError(f"expected a run directory (a str or pathlib.Path), got {run_dir!r}")
    quiet = bool_argument("quiet", quiet)
    run_dir = Path(run_dir)
    base = run_dir / "checkpoints" / "last"
    if not run_dir.is_dir():
        raise no_run_dir(run_dir)
    if not checkpoint_present(base):
        if checkpoint_present(run_dir / "last"):  # RUN_DIR/checkpoints given
            raise CanterError(f"'{run_dir}' is a checkpoints folder, not a run directory; "
                              f"{run_dir_hint(run_dir / 'last')}")
        raise nothing_to_resume(run_dir)
    check_free(run_dir)  # another training writing it (in this process or another): nothing is touched
    check_writable(run_dir)  # not after training up to the first checkpoint, which could not be saved
    state, meta = load_checkpoint(base)
    if not meta.get("resumable") or not isinstance(state, dict) or not isinstance(state.get("trainer"), dict):
        raise CanterError(f"{base} is not a resumable checkpoint: it holds no trainer state (a best or step-N "
                          f"checkpoint copied over last is for loading only; or it was written by an older canter)")
    check_resume_metadata(meta, state, base)
    refuse_nonfinite(base, state, "resuming it")  # NaN weights: a run that diverged, or damage
    flags = _COMMAND_LINE.get()  # canter train --resume's: its errors name options, canter.resume's keywords
    check_same_run(run_dir, meta["config"], base, flags)  # a checkpoint copied from another run: before its modules import
    import_user_modules(meta.get("user_modules", []), f"checkpoint {base}", meta.get("config"))  # register its names
    cfg = dict(meta["config"])
    if isinstance(cfg.get("callbacks"), list):  # a run saved before exponent forms were numbers ('1e-3')
        cfg["callbacks"] = as_numbers_now(cfg["callbacks"])
    hp_values = cfg.pop("hparams", {})
    check_settings(settings, hp_values, run_dir, flags)
    for key in EMPTY_STRING_FIX.keys() & settings.keys():  # ray_address='' given (a saved '' is the run's own)
        check_empty_string(key, settings[key])
    cfg.update(settings)  # written to config.yaml and the next 'last': a later resume keeps them
    check_keep_has_checkpoints(settings, cfg.get("checkpoint_every"), flags)
    check_address_has_explorers(settings, cfg.get("explorers"), flags)
    if max_steps is not None:
        cfg["max_steps"] = max_steps
    if max_seconds is not SAVED:  # None given: the budget dropped
        cfg["max_seconds"] = max_seconds
    check_resume_device(cfg.get("device"), run_dir)
    run = build(RunConfig, cfg, from_python=set(settings))  # (canter train --resume gives None for none refused)
    algo_cfg = build_saved_hparams(lookup("algorithm", run.algo).Config, hp_values, f"checkpoint {base}")
    check_saved_policy_hparams(run, f"checkpoint {base}")  # a policy's own, as hparams'
    check_continues(run_dir, meta, run, max_steps, None if max_seconds is SAVED else max_seconds, flags)
    check_history(run_dir, meta.get("history_rows") or {})  # before anything is written
    spaces = [checkpoint_space(meta, w, base) for w in ("observation_space", "action_space")]
    check_image_layout_kept(spaces[0], env_layout=given_image_layout(run.env))  # Atari stacks: chw at any shape
    check_given_layout_kept(spaces[0], given_image_layout(run.env))  # before the build makes envs (or starts Ray)
    with threads_kept():  # as make_trainer: the caller's thread counts until the run trains
        load_agent_state(make_agent(run, algo_cfg, *spaces), state, base)  # the weights fit: checked before writing
    resume_dataset(run_dir, cfg, state["trainer"], dataset, flags)  # before anything is written
    run.dataset = cfg.get("dataset")  # a moved dataset's new path
    check_config_unedited(run_dir, meta["config"], (*settings, *(("dataset",) if dataset is not None else ())),
                          resolved_dict(run, algo_cfg), flags)  # after the checkpoint
    with threads_kept():
        run_obj = _build(run, algo_cfg, run_dir, quiet, as_callbacks(callbacks, hooks),
                         resumed=resumed_metadata(meta, settings, run.checkpoint_every))
    assert isinstance(run_obj, Run)
    agent = run_obj.trainer.agent
    for which in ("observation_space", "action_space"):
        saved = checkpoint_space(meta, which, base)
        if not spaces_match(saved, getattr(agent, which)):
            run_obj.close()
            raise CanterError(f"cannot resume: the env's {which.replace('_', ' ')} differs from the checkpoint's"
                              + joint_alive_mask_note(saved, getattr(agent, which), getattr(agent, "action_space", None)))
        if which == "observation_space":
            try:
                check_env_layout_kept(saved, agent.observation_space)
            except CanterError:
                run_obj.close()
                raise
        if not read_alike(saved, getattr(agent, which)):
            run_obj.close()
            raise CanterError(f"cannot resume: canter now packs the env's {which.replace('_', ' ')} with image "
                              f"entries this run's model reads as values (as canter did before 2026-11-27), so its "
                              f"weights fit no new model. canter.load, eval and play still run it; train a new run")
    agent.load_state_dict(state["agent"], weights_only=False)
    keep_best_on_disk(run_dir, state["trainer"])  # a 'best' saved after 'last' (a kill, an error) stays the best
    run_obj.trainer.resume_from(state["trainer"])
    check_opponents(meta, run_obj.trainer)  # a frozen opponent's run trained further: warned, not exact
    run_obj.trainer.resume_source = base  # named by an error while the trainer restores its state
    return run_obj


@keywords_checked("canter.resume", positional="max_steps and the rest are keywords: canter.resume(run_dir, max_steps=N)")
def resume(run_dir: str | Path, *, quiet: bool = True, **kwargs: Any) -> Agent | MultiPolicyAgent:
    """Continue the run in ``run_dir`` to its end and return the agent (see :func:`resume_trainer`)."""
    with global_rngs_kept(), threads_kept():
        run = resume_trainer(run_dir, quiet=quiet, **kwargs)
        try:
            for _ in run():
                pass
        finally:
            run.close()
    return _trained_agent(run)


@keywords_checked("canter.load", {
    "env": "an agent loads without an env; canter.evaluate(agent, env=ID) evaluates it on another, and "
           "canter.train(ALGO, env=ID, init_from=PATH) trains on from its weights",
    "custom_objects": "nothing is unpickled; a component of your own is imported again by the module that registered it"})
def load(
    path: str | Path, weights_only: bool = True, device: str | torch.device | None = None,
) -> Agent | MultiPolicyAgent:
    """Load an agent from a run directory or a checkpoint (safetensors + JSON; nothing is unpickled).

    ``weights_only`` restores networks and observation statistics (what acting needs); pass
    False to restore optimizers, RNG and counters too. The caller's global random states (Python's,
    NumPy's, torch's) are left as they were; torch's thread count is set to the run's. The agent
    carries ``run_config``, ``metadata`` (the checkpoint's JSON) and ``run_dir`` (the run directory
    the checkpoint lies in, None for a checkpoint outside one), as :func:`train`'s does. ``device``
    (``cpu``, ``cuda``, ``cuda:N``, ``auto``, or a ``torch.device``) is where the agent goes; by default the device it was trained on
    when this machine has it, else ``cpu`` (a checkpoint trained on a GPU loads on a CPU-only machine).
    """
    weights_only = bool_argument("weights_only", weights_only)  # 'no' would be truthy: the whole state restored
    base = find_checkpoint(path)
    state, meta = load_checkpoint(base)
    warn_nonfinite(base, state, weights_only)  # loaded all the same: a diverged run's last stays inspectable
    cfg = meta.get("config")
    if not isinstance(cfg, dict) or not isinstance(cfg.get("hparams", {}), dict):
        raise CanterError(f"checkpoint {base} has no valid 'config' in its metadata")
    cfg = dict(cfg)
    hp_values = cfg.pop("hparams", {})
    import_user_modules(meta.get("user_modules", []), f"checkpoint {base}", meta.get("config"))  # register its names
    cfg["device"] = load_device(cfg.get("device"), device)
    run = build(RunConfig, cfg)
    algo_cfg = build_saved_hparams(lookup("algorithm", run.algo).Config, hp_values, f"checkpoint {base}")
    check_saved_policy_hparams(run, f"checkpoint {base}")  # a policy's own, as hparams'
    spaces = [checkpoint_space(meta, w, base) for w in ("observation_space", "action_space")]
    with global_rngs_kept():  # building the agent seeds them, for initial weights the checkpoint replaces
        agent = make_agent(run, algo_cfg, *spaces)
    load_agent_state(agent, state, base, weights_only)
    agent.metadata, agent.made_config = meta, None  # the checkpoint's metadata, not make_agent's step-0 config
    agent.run_config = run
    in_run = base.parent.name == "checkpoints" and (base.parent.parent / "config.yaml").exists()
    agent.run_dir = base.parent.parent if in_run else None  # as canter.train's agent has it
    return agent
