"""``canter tune``: an Optuna study over the search space that the config fields declare.

Each hyperparameter's search space lives on its config field (``hp(..., search={"low": 1e-5,
"high": 3e-3, "log": True})`` or ``search={"choices": [...]}``); ``--space FILE.yaml`` overrides
entries by name (``name: null`` leaves that one untuned, run keys such as ``n_envs`` may be added).
Trials are sampled by TPE and pruned by the median rule on the evaluation returns the trainer
yields (reported at the interval reached, env steps // the study's first eval_every, so that trials are
compared at the same env step). The objective is a trial's last evaluation mean return. The study
lives in an Optuna storage (SQLite in the output directory by default, or any RDB URL so that
several machines share it) and resumes when run again with the same storage
and study name: ``--trials`` is the total number of finished (complete or pruned) trials wanted.
A resumed study may change ranges but not the kind, log scale or choices of a parameter its trials
sampled (:func:`check_study_space` refuses that before any trial).
"""
from __future__ import annotations

import json
import logging
import math
import shlex
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from canter.config import resolve_config, resolved_dict
from canter.config_layers import set_items, set_list
from canter.config_imports import import_config_imports
from canter.errors import CanterError, require
from canter.tools.checks import check_algo_env
from canter.tools.tune_agents import best_of, check_agents_belong, keep_best_agent, save_if_best, trial_rows
from canter.tools.tune_workers import INTERRUPTS, STOP_SIGNALS, caused_by_interrupt, run_workers, trial_signals

from canter.tools.tune_space import (Param, TrialSeededSampler, _decode, check_space_policy_hparams,  # noqa: F401
                                     check_space_run_keys, check_study_space, fit_params, search_space)  # (Param, _decode re-exported)
from canter.tools.tune_storage import discard_storage, fail_stale_trials, in_memory, new_sqlite_file, shown_url
from canter.tools.tune_storage import open_storage as _storage  # (tests replace tune._storage)
from canter.tools.tune_study import (  # noqa: F401 (_STUDY_LINE re-exported)
    _STUDY_LINE, _adopt_report_every, _check_out_owner, _check_study, _study_every)
from canter.yaml_io import dump_yaml


@dataclass
class TuneResult:
    """What a finished ``tune`` call found and wrote."""

    study_name: str
    storage: str
    best_trial: int
    best_value: float
    best_params: dict[str, Any]
    counts: dict[str, int]
    files: dict[str, Path] = field(default_factory=dict)


class Interrupted(KeyboardInterrupt):
    """A Ctrl-C (or SIGTERM) that stopped ``tune``; ``result`` is the study's best so far, written to ``best.yaml``
    (None when no trial has completed)."""

    result: TuneResult | None = None


def _objective(job: dict[str, Any], space: dict[str, Param]) -> Any:
    """The Optuna objective: train with the trial's parameters, report every evaluation, prune."""
    import optuna

    from canter.api import make_trainer

    def objective(trial: Any) -> float:
        """One trial; an error that a Ctrl-C caused (a vector env's worker, a storage commit) is the Ctrl-C:
        every other exception only fails the trial (``catch``), this one must stop the study."""
        try:
            with trial_signals() as reclaim:  # a trial's own SIGTERM handler (ray.init's) is taken back, its exit a
                return train(trial, reclaim)  # Ctrl-C
        except Exception as exc:
            if INTERRUPTS.pending or caused_by_interrupt(exc):
                raise KeyboardInterrupt from None
            raise

    def train(trial: Any, reclaim: Any) -> float:
        """Train one trial; its value is the last evaluation's mean return. ``reclaim()`` puts tune's SIGTERM handler
        back in place of one the trainer installed (:func:`trial_signals`)."""
        params = {name: p.suggest(trial) for name, p in space.items()}
        # the trial's own config, for best.yaml: a resumed study may run with other flags (--max-steps, ...)
        run, algo_cfg = resolve_config(job["algo"], job["env"], job["config_file"], job["sets"],
                                       **{**job["run_overrides"], **params})
        fitted = fit_params(params, run, algo_cfg)
        if fitted != params:
            params = fitted
            run, algo_cfg = resolve_config(job["algo"], job["env"], job["config_file"], job["sets"],
                                           **{**job["run_overrides"], **params})
        config = resolved_dict(run, algo_cfg)
        try:  # Optuna keeps user attributes as JSON; a config it cannot hold is resolved again for best.yaml
            json.dumps(config, allow_nan=True)
        except (TypeError, ValueError):
            pass
        else:
            trial.set_user_attr("config", config)
        trainer = make_trainer(job["algo"], job["env"], config_file=job["config_file"], sets=job["sets"],
                               run_dir=None, quiet=True, **{**job["run_overrides"], **job["trial_overrides"], **params})
        # the study's reporting interval (its first run's eval_every), not this trial's: a resumed study with another
        # --eval-every, or an eval_every in the search space, is still compared at the same env steps
        every = _study_every(trial.study, trainer.run.eval_every)
        n_evals, at, last = 0, 0, None
        try:
            records = trainer()
            while True:
                with INTERRUPTS.opened():  # a Ctrl-C stops the training at once, never a storage write below
                    record = next(records, None)
                reclaim()  # ray.init's SIGTERM handler (explorers, started by the first record) would cut the writes
                if record is None:
                    break
                if record.evaluation is None:
                    continue
                n_evals += 1
                last = record.evaluation.mean_return
                if not math.isfinite(last):  # no value Optuna takes: the median rule pruned it, a finished trial
                    trial.set_user_attr("steps", trainer.step)
                    raise CanterError(f"the evaluation at step {record.step} returned a mean return of {last} (an "
                                      "episode's rewards were NaN or infinite); the trial has no value")
                # reported at the interval reached (env steps // the study's eval_every), not at the count of
                # evaluations: a trial whose rollout spans 8 intervals evaluates once per 8, and the median rule
                # must compare it with the others at the same env step. An evaluation in the interval of the
                # previous one (the last, at max_steps) is not reported: the trial's value is it, and it ends
                reached = record.step // every if every > 0 else n_evals
                if reached <= at:
                    continue
                at = reached
                trial.report(last, at)
                # never at the evaluation that ends the trial (its budget spent, or stopped by early stopping,
                # a time budget or a callback): pruning saves nothing there, and it would throw away a complete
                # result (rl-zoo3 prunes it; the trial is then PRUNED after all its steps)
                spent = record.done or record.step >= trainer.run.max_steps
                if n_evals > job["prune_warmup"] and not spent and trial.should_prune():
                    trial.set_user_attr("steps", trainer.step)
                    raise optuna.TrialPruned(f"pruned at evaluation {n_evals} (step {trainer.step}): return {last:.2f}")
            if last is not None and job.get("out") is not None:
                save_if_best(trial, trainer, Path(job["out"]), last)
        finally:
            trainer.close()
        trial.set_user_attr("steps", trainer.step)
        if last is None:
            raise CanterError("the trial ended without an evaluation; lower --eval-every or raise --max-steps")
        return last

    return objective


def _optimize(job: dict[str, Any], worker: int = 0, storage: Any = None) -> None:
    """Run trials until the study has ``job['trials']`` finished ones (one process), on ``storage`` (default: a
    storage opened on ``job['storage']``)."""
    import optuna
    from optuna.trial import TrialState

    if worker:
        optuna.logging.set_verbosity(optuna.logging.WARNING if job["quiet"] else optuna.logging.INFO)
    # a --jobs worker is a fresh process: the config's imports may register the algorithm looked up next
    import_config_imports(job["config_file"], job["run_overrides"], job["sets"])
    space = search_space(job["algo"], job["space_file"])
    # the warm-up counts evaluations (the objective asks only after them), not the interval numbers reported
    pruner = (optuna.pruners.MedianPruner(n_startup_trials=job["prune_startup"], n_warmup_steps=0)
              if job["prune"] else optuna.pruners.NopPruner())
    storage = storage if storage is not None else _storage(job["storage"])
    study = optuna.load_study(study_name=job["study"], storage=storage, pruner=pruner)
    # seeded per trial number: workers and machines starting on one study at once sampled the same values
    study.sampler = TrialSeededSampler(job["sampler_seed"])
    done = (TrialState.COMPLETE, TrialState.PRUNED)
    remaining = job["trials"] - len(study.get_trials(deepcopy=False, states=done))
    if remaining <= 0:
        return
    # n_trials would count failed trials too; run until the study has the finished trials wanted, but
    # give up after as many failed trials (a search space whose samples keep failing). Any exception of
    # a trial fails only that trial (a CanterError as one line, others with their traceback): a GPU
    # out-of-memory error of one sampled batch size or network must not end the whole study
    log = optuna.logging.get_logger("optuna.study._optimize")  # the logger of "Trial N failed ..."
    quiet_failures = _NoTraceback()
    log.addFilter(quiet_failures)
    try:
        # a Ctrl-C or SIGTERM is held back while Optuna writes to the storage (tune_workers); a worker's SIGTERM
        # is routed to INTERRUPTS already
        with INTERRUPTS.held(() if worker else STOP_SIGNALS):
            study.optimize(_objective(job, space), n_trials=None, timeout=job["timeout"], catch=(Exception,),
                           callbacks=[optuna.study.MaxTrialsCallback(job["trials"], states=done),
                                      _StopAfterFailures(remaining), INTERRUPTS.stop_study], gc_after_trial=False)
    except Exception as exc:
        # Ctrl-C inside a storage commit that was not held back (the calling thread is not the main one):
        # Optuna's own bookkeeping then fails on it (UnboundLocalError or StorageInternalError raised from
        # the KeyboardInterrupt); it is a Ctrl-C
        if caused_by_interrupt(exc):
            raise KeyboardInterrupt from None
        raise
    finally:
        log.removeFilter(quiet_failures)


class _NoTraceback(logging.Filter):
    """Drop the traceback from Optuna's "Trial N failed" warning when the trial failed on a
    :class:`CanterError` (its one-line message is in the warning) or was interrupted (Ctrl-C)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep the record; strip its traceback if it is one of ours."""
        if record.exc_info and isinstance(record.exc_info[1], (CanterError, KeyboardInterrupt)):
            record.exc_info, record.exc_text = None, None
        return True


class _StopAfterFailures:
    """Optuna callback: stop the study after ``limit`` trials of this process have failed."""

    def __init__(self, limit: int) -> None:
        self.limit, self.failed = limit, 0

    def __call__(self, study: Any, trial: Any) -> None:
        from optuna.trial import TrialState

        if trial.state == TrialState.FAIL:
            self.failed += 1
            if self.failed >= self.limit:
                study.stop()


def tune(algo: str, env: str | None = None, trials: int = 20, *, out: str | Path | None = None,
         timeout: float | None = None, jobs: int = 1, storage: str | None = None, study: str | None = None,
         space_file: str | Path | None = None, config_file: str | Path | None = None,
         sets: list[str] | str | None = (), prune: bool = True, prune_startup: int = 5, prune_warmup: int = 1,
         sampler_seed: int | None = 0, quiet: bool = False, **run_overrides: Any) -> TuneResult:
    """Run (or resume) an Optuna study for ``algo`` on ``env`` and write ``best.yaml``, the best trial's agent
    (``agents/trial-N``), ``trials.csv`` and plots to ``out``.

    ``run_overrides`` are run-config keys for every trial (``max_steps``, ``seed``, ``eval_every``,
    ...). ``jobs`` > 1 runs that many worker processes on the same storage, each with one torch
    thread. Returns the best trial; raises :class:`CanterError` for bad input before any trial, and
    :class:`Interrupted` (a KeyboardInterrupt) on a Ctrl-C or SIGTERM, after writing the best trial so far.
    """
    optuna = require("optuna", "tune", "canter tune")
    sets = set_list(sets)  # None is no --set items, one "key=value" one item
    if trials < 1:
        raise CanterError(f"--trials must be >= 1, got {trials}")
    if jobs < 1:
        raise CanterError(f"--jobs must be >= 1, got {jobs}")
    if jobs > 1 and _bootstrapping():
        # nothing in this process can catch a CanterError (it is multiprocessing importing the script): raised, it
        # printed a traceback from each worker; one line and exit code 2, as a worker's other errors (_worker)
        print("canter: error: tune(jobs=...) ran again in a --jobs worker that imports your script: put the script's "
              "tune call under if __name__ == '__main__': (the workers are spawned processes)", file=sys.stderr,
              flush=True)
        raise SystemExit(2)
    if jobs > 1 and storage is not None and in_memory(storage):
        raise CanterError(f"--storage '{shown_url(storage)}' is an in-memory SQLite database, which --jobs workers "
                          "cannot share; give a file (sqlite:///PATH) or leave --storage out (OUT/study.db)")
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):  # nan compares False
        raise CanterError(f"--timeout must be a finite number of seconds > 0, got {timeout}")
    if sampler_seed is not None and not 0 <= sampler_seed <= 2**32 - 1:
        raise CanterError(f"--sampler-seed must be between 0 and 2**32 - 1, got {sampler_seed}")
    if prune_startup < 0 or prune_warmup < 0:
        raise CanterError("--prune-startup and --prune-warmup must be >= 0")
    # the base config must be valid on its own (nothing is written if not); resolving it first imports
    # its ``imports``, which may register the algorithm whose search space is read next
    run, _ = resolve_config(algo, env, config_file, list(sets), **run_overrides)
    if run.eval_episodes == 0:
        raise CanterError("tune scores each trial by its evaluations, but eval_episodes: 0 runs none; set "
                          "'eval_episodes' >= 1 (e.g. --eval-episodes 10)")
    unused = [k for k, on in (("record_every", run.record_every), ("wandb", run.wandb)) if on]
    if unused:  # trials train without a run directory (or loggers): these would do nothing
        raise CanterError(f"'{unused[0]}' applies to a run directory, which tune's trials do not write; drop it "
                          f"(train the best config with canter train to record it)")
    space = search_space(algo, space_file)
    check_space_run_keys(space)
    fixed = set()  # the hyperparameters the flags and --set fix for every trial
    # (--set 'hparams={lr: 0.01}' counts as hparams.lr: set_items reads it as the config layers do)
    for key, value in [*set_items(list(sets))[0].items(), *run_overrides.items()]:
        if key == "hparams":  # tune(hparams={...}) from Python
            fixed.update(str(k) for k in (value if isinstance(value, dict) else {}))
        else:
            fixed.add(key[8:] if key.startswith("hparams.") else key)
    clash = sorted(set(space) & fixed)
    if clash:
        raise CanterError(f"'{clash[0]}' is both tuned and fixed; drop it from the flags/--set "
                          "or set it to null in --space")
    algo_name, env_id = run.algo, run.env
    from canter.registry import lookup
    from canter.tools.checks import dataset_mismatch

    # every trial would fail on these: said once, first (the dataset's metadata: a missing file, a checkpoint given)
    if lookup("algorithm", algo_name).family == "offline":
        if run.dataset is None:
            raise CanterError(f"{algo_name} learns from a dataset: pass --dataset PATH (write one with: canter "
                              "collect RUN_DIR --out PATH)")
        mismatch = dataset_mismatch(run)
        if mismatch is not None:
            what = "on" if mismatch[0] == "env" else "with env_kwargs"
            mine = run.env if mismatch[0] == "env" else run.env_kwargs
            fix = f"pass --env {mismatch[1]}" if mismatch[0] == "env" else "leave env_kwargs out of --set"
            raise CanterError(f"dataset '{run.dataset}' was collected {what} {mismatch[1]}, not {mine}; {fix}")
    elif run.dataset is not None:
        raise CanterError(f"--dataset is only for offline algorithms; {algo_name} learns from the env: drop --dataset")
    check_algo_env(algo_name, env_id, run.env_kwargs, run.policies, run.central_state, run)
    check_space_policy_hparams(space, run)  # (after check_algo_env: the env is known to make)
    safe_env = env_id.replace("/", "-").replace(":", "-")
    out_dir = Path(out) if out is not None else Path("runs") / f"tune-{algo_name}-{safe_env}"
    study_name = study or f"{algo_name}-{env_id}"
    if out_dir.exists() and not out_dir.is_dir():
        raise CanterError(f"--out '{out_dir}' is a file, not a directory")
    # SQLAlchemy reads a URL's '?' as the start of its query and decodes '%XX': escape them in the path
    db = str((out_dir / "study.db").resolve()).replace("%", "%25").replace("?", "%3F")
    url = storage or f"sqlite:///{db}"
    _check_out_owner(out_dir, study_name, url, default_storage=storage is None)
    created = [p for p in (out_dir, *out_dir.parents) if not p.exists()]
    new_db = new_sqlite_file(url)  # the SQLite file that opening the storage creates: removed again if refused
    verbosity = optuna.logging.get_verbosity()  # the caller's, given back at the end
    # Optuna's own "new study" / "existing study" line waits until the study is accepted: a refusal is one line
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        opened = None
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            if new_db is not None:  # refused before the storage file is written
                check_agents_belong(out_dir, study_name, None, shown_url(url))
            # one storage for the study in this process: an in-memory SQLite database lives in it alone
            opened = _storage(url)
            if new_db is None:
                check_agents_belong(out_dir, study_name, opened, shown_url(url))
            existed = study_name in optuna.study.get_all_study_names(opened)
            st = optuna.create_study(study_name=study_name, storage=opened, direction="maximize",
                                     load_if_exists=True)
            _check_study(st, study_name, url, algo_name, env_id, space)
            _adopt_report_every(st)
        except BaseException:
            if new_db is not None:  # a refused call leaves no storage file behind (nor its directories)
                discard_storage(opened, new_db)
            for p in created:  # the directories made for the study, innermost first, if still empty
                try:
                    p.rmdir()
                except OSError:
                    break
            raise
        optuna.logging.set_verbosity(optuna.logging.WARNING if quiet else optuna.logging.INFO)
        optuna.logging.get_logger("optuna.study.study").info(
            f"Using an existing study with `study_name='{study_name}'` instead of creating a new one." if existed
            else f"A new study created in RDB with name: {study_name}")
        job = {
            "algo": algo_name, "env": env_id, "config_file": None if config_file is None else str(config_file),
            "sets": list(sets), "run_overrides": dict(run_overrides),
            "space_file": None if space_file is None else str(space_file),
            "trials": trials, "timeout": timeout, "storage": url, "study": study_name, "prune": prune,
            "prune_startup": prune_startup, "prune_warmup": prune_warmup, "sampler_seed": sampler_seed, "quiet": quiet,
            "trial_overrides": {} if jobs == 1 else {"torch_threads": 1}, "out": str(out_dir),
        }
        def finish() -> TuneResult:
            return _finish(st.study_name, url, algo_name, env_id, config_file, list(sets), run_overrides, out_dir,
                           len(space), storage=opened)

        try:
            if jobs == 1:
                _optimize(job, storage=opened)
            else:
                run_workers(job, jobs)
        except KeyboardInterrupt:
            # as rl-zoo3 does: the best of the trials finished so far is written (none complete: nothing)
            stopped = Interrupted()
            try:
                stopped.result = finish()
            except CanterError:
                pass
            raise stopped from None
        return finish()
    finally:
        optuna.logging.set_verbosity(verbosity)


def _bootstrapping() -> bool:
    """Whether this is a spawned process still importing its parent's main module (a script without an
    ``if __name__ == '__main__':`` guard, whose ``tune(jobs=2)`` runs again in each worker)."""
    import multiprocessing

    return bool(getattr(multiprocessing.current_process(), "_inheriting", False))


def _finish(study_name: str, url: str, algo: str, env: str, config_file: Any, sets: list[str],
            run_overrides: dict[str, Any], out_dir: Path, n_params: int, storage: Any = None) -> TuneResult:
    import optuna
    from optuna.trial import TrialState

    st = optuna.load_study(study_name=study_name, storage=storage if storage is not None else _storage(url))
    fail_stale_trials(st)  # a killed run's trial, also when no trial ran now (the study had enough)
    counts = {s.name.lower(): len(st.get_trials(deepcopy=False, states=(s,)))
              for s in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING,
                        TrialState.WAITING)}
    from canter.atomic import atomic_write
    from canter.run_meta import provenance_comment
    from canter.tools.bench_results import to_csv

    trials_csv = out_dir / "trials.csv"  # every trial, as rl-zoo3's report: also failed ones, with no best
    rows = trial_rows(st)
    if rows:
        atomic_write(trials_csv, to_csv(rows).encode())
    complete = st.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not complete:
        where = f" and {trials_csv}" if rows else ""
        raise CanterError(f"no trial of study '{study_name}' completed ({counts}); see the messages above{where}")
    best = best_of(complete)  # a tie: the earliest trial, whose agent was kept (Optuna leaves it to the database)
    config = best.user_attrs.get("config")  # what the trial trained with
    if config is None:  # a trial of an earlier canter, which did not keep it
        config = resolved_dict(*resolve_config(algo, env, config_file, sets, **{**run_overrides, **_decode(best.params, best.distributions)}))
    files = {"best": out_dir / "best.yaml"}
    agent = keep_best_agent(st, out_dir, best.number)
    quoted = {k: shlex.quote(str(p)) for k, p in (("best", files["best"]), ("agent", agent)) if p}  # paths with spaces
    header = (f"# canter tune: best of {counts['complete']} complete trials (trial {best.number}, last evaluation "
              f"return {best.value:.4g})\n# study '{study_name}' in {shown_url(url)}\n# train it with: canter train {algo} -f "
              f"{quoted['best']}\n" + (f"# its agent: canter play {quoted['agent']}\n" if agent else "")
              + provenance_comment())  # the code that wrote it, as config.yaml's first line (not first here: the
    # study line stays second, where _check_out_owner reads it)
    if agent:
        files["agent"] = agent
    atomic_write(files["best"], (header + dump_yaml(config)).encode())
    files["trials"] = trials_csv
    files.update(save_plots(st, out_dir, n_params))
    return TuneResult(study_name, url, best.number, float(best.value), _decode(best.params, best.distributions), counts,
                      files)


def save_plots(study: Any, out_dir: Path, n_params: int) -> dict[str, Path]:
    """Optimisation history, intermediate values and parameter importances as PNG (those that apply)."""
    import matplotlib
    import matplotlib.pyplot as plt
    from optuna.trial import TrialState
    from optuna.visualization import matplotlib as ovm

    plots = {"history": ("optimization_history.png", ovm.plot_optimization_history, None)}
    if any(t.intermediate_values for t in study.get_trials(deepcopy=False)):  # else an empty plot and a warning
        plots["intermediate"] = ("intermediate_values.png", ovm.plot_intermediate_values, "env steps / eval_every")
    if n_params and len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))) >= 2:
        plots["importance"] = ("param_importances.png", ovm.plot_param_importances, None)
    files = {}
    for key, (name, fn, xlabel) in plots.items():
        # optuna's plots switch pyplot's global style; rc_context puts it back afterwards
        with warnings.catch_warnings(), matplotlib.rc_context():
            warnings.simplefilter("ignore")
            try:
                ax = fn(study)
            except (ValueError, RuntimeError) as exc:  # e.g. importances of parameters that never varied
                print(f"canter tune: no {name}: {exc}")
                continue
            if xlabel:
                ax.set_xlabel(xlabel)
            fig = ax.figure
            fig.set_size_inches(8, 5)
            fig.tight_layout()
            fig.savefig(out_dir / name, dpi=100)
            plt.close(fig)
        files[key] = out_dir / name
    return files
