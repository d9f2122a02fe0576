"""What ``canter tune`` writes besides best.yaml: the trials table (:func:`trial_rows`, ``OUT/trials.csv``) and the
best trial's agent: ``OUT/agents/trial-N`` (safetensors + JSON), which ``canter play``,
``canter eval`` and ``canter.load`` read.

A trial that completes better than every complete trial before it saves its agent as it ends (the agent its
value, its last evaluation, was measured on); one no better saves nothing, so the directory holds a few agents
while the study runs. At the end (:func:`keep_best_agent`), the agents of the other finished trials are removed.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

_AGENT = re.compile(r"^trial-(\d+)\.(safetensors|json)$")


def agent_path(out_dir: Path, number: int) -> Path:
    """The checkpoint (without its extensions) of trial ``number``'s agent."""
    return Path(out_dir) / "agents" / f"trial-{number}"


def save_if_best(trial: Any, trainer: Any, out_dir: Path, value: float) -> None:
    """Save the agent of the trial's ``trainer`` as :func:`agent_path` when ``value`` beats every complete trial of
    the study so far (or ties with the best of them, from a later trial: :func:`best_of`)."""
    import optuna
    from optuna.trial import TrialState

    from canter.checkpoint import save_agent

    complete = trial.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    best = best_of(complete)
    # a tie with the best goes to the earlier trial (best_of), which may end after this one with --jobs
    if best is not None and (value < best.value or (value == best.value and trial.number > best.number)):
        return
    try:
        save_agent(trainer.agent, agent_path(out_dir, trial.number))
    except Exception as exc:  # noqa: BLE001 - a full disk, an agent that cannot be saved: the result stays
        optuna.logging.get_logger("optuna").warning(f"trial {trial.number}: its agent was not saved: "
                                                    f"{type(exc).__name__}: {exc}")


def best_of(trials: list[Any]) -> Any:
    """The best of complete ``trials`` (None if none): the highest value, a tie going to the earliest trial (the
    lowest number). Optuna's ``best_trial`` leaves ties to the database's row order, and a trial saves its agent
    only when it beats this one, so with ``--jobs`` (a later trial ending first with the same value) the best trial
    it named could have no agent."""
    return max(trials, key=lambda t: (t.value, -t.number), default=None)


def check_agents_belong(out_dir: Path, study_name: str, storage: Any, shown: str) -> None:
    """Refuse (CanterError) an ``out_dir`` whose ``agents/`` holds trial agents, or that holds a ``trials.csv`` canter
    tune wrote, while the study (``storage``: an Optuna storage; None where it does not exist yet, shown as ``shown``)
    has no trials: they are an earlier study's (its study.db deleted, another --storage or --study), whose trial-N
    this study's would be mixed with (and a best trial whose agent was not saved would be shown one of theirs), or
    whose trials table (a study whose every trial failed leaves it alone) this study's would replace. Nothing is
    removed."""
    from canter.errors import CanterError

    agents, table = Path(out_dir) / "agents", Path(out_dir) / "trials.csv"
    found = sorted(f.name for f in agents.iterdir() if _AGENT.match(f.name)) if agents.is_dir() else []
    # an earlier study's trials.csv alone (every trial of it failed: no agent, no best.yaml) would be overwritten
    # with this study's rows, and its best.yaml would then keep the earlier study from resuming in its own --out
    held = _tune_table(table) if not found else False
    if not found and not held:
        return
    if storage is not None:
        import optuna

        summaries = optuna.study.get_all_study_summaries(storage, include_best_trial=False)
        if any(s.study_name == study_name and s.n_trials for s in summaries):
            return
    what, move = (agents / found[0], agents) if found else (table, table)
    raise CanterError(f"--out '{out_dir}' holds {what} of an earlier study, but study '{study_name}' in "
                      f"{shown} has no trials (was its study.db deleted, or is it another --study?); choose another "
                      f"--out, or move {move} away to start the study there")


def _tune_table(path: Path) -> bool:
    """Whether ``path`` is a trials.csv that canter tune wrote (its header starts with tune's columns)."""
    from canter.run_dirs import TUNE_TRIALS_HEADER

    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.readline().startswith(TUNE_TRIALS_HEADER)
    except OSError:
        return False


def keep_best_agent(study: Any, out_dir: Path, best: int) -> Path | None:
    """Remove the saved agents of the study's finished trials other than ``best``; return ``best``'s, if saved
    (an earlier canter, or another machine on a shared storage, may have run it)."""
    from optuna.trial import TrialState

    from canter.checkpoint import checkpoint_present

    agents = Path(out_dir) / "agents"
    if not agents.is_dir():
        return None
    finished = {t.number for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED,
                                                                          TrialState.FAIL))}
    for f in agents.iterdir():
        m = _AGENT.match(f.name)
        if m and int(m.group(1)) != best and int(m.group(1)) in finished:
            f.unlink(missing_ok=True)
    path = agent_path(out_dir, best)
    return path if checkpoint_present(path) else None


def trial_rows(study: Any) -> list[dict[str, Any]]:
    """One row per trial of ``study`` (rl-zoo3's report): number, state, value, env steps trained, seconds and the
    sampled parameters (lists as JSON; a parameter a trial did not sample left empty)."""
    import json

    from canter.tools.tune_space import _decode

    trials = study.get_trials(deepcopy=False)
    names = list(dict.fromkeys(name for t in trials for name in t.params))
    rows = []
    for t in trials:
        params = _decode(t.params)
        seconds = (t.datetime_complete - t.datetime_start).total_seconds() if t.datetime_complete and t.datetime_start \
            else ""
        row = {"number": t.number, "state": t.state.name.lower(), "value": "" if t.value is None else t.value,
               "steps": t.user_attrs.get("steps", ""), "seconds": seconds}
        for name in names:
            value = params.get(name, "")
            row[name] = json.dumps(value) if isinstance(value, (list, dict)) else value
        rows.append(row)
    return rows
