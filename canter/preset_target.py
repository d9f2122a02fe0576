"""A shipped preset's ``target_reward`` on an env the user changed: the preset was tuned for the env's default
settings (CartPole-v1's 475 of at most 500 steps), so ``env_kwargs: {max_episode_steps: 100}`` may put it out of reach,
and the run then never stops early and ends "not solved". Warned about in one line, naming the target and how to
give one's own, once the run is built (a bad input's one-line error comes alone)."""
from __future__ import annotations

from typing import Any

from canter.errors import CanterWarning, warn

#: env arguments that change how an env is shown, not its returns: they leave a preset's target where it was
SHOWN_ONLY = frozenset({"render_mode"})

#: the attribute of a resolved :class:`~canter.config.RunConfig` holding the warning (not a field: never recorded)
NOTE = "_preset_target_note"


def changed_env_kwargs(run: Any, run_values: dict[str, Any], preset_keys: set[str]) -> list[str]:
    """The ``env_kwargs`` / ``eval_env_kwargs`` of ``run`` (non-empty) that a layer other than a shipped preset gave
    (``run_values``: the keys the layers gave; ``preset_keys``: the run keys whose value is a preset's)."""
    return [key for key in ("env_kwargs", "eval_env_kwargs")
            if key in run_values and key not in preset_keys and _changing(getattr(run, key))]


def _changing(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``kwargs`` that may change the env's returns (all but :data:`SHOWN_ONLY`)."""
    return {k: v for k, v in (kwargs or {}).items() if k not in SHOWN_ONLY}


def note_preset_target(run: Any, run_values: dict[str, Any], preset_keys: set[str]) -> None:
    """Keep on ``run`` (a :class:`~canter.config.RunConfig`, as :func:`~canter.config.resolve_config` built it from
    ``run_values``) the warning that it keeps a shipped preset's ``target_reward`` (``preset_keys``) while the user's
    ``env_kwargs`` (or ``eval_env_kwargs``) change the env; :func:`warn_preset_target` gives it."""
    changed = changed_env_kwargs(run, run_values, preset_keys)
    if run.target_reward is None or "target_reward" not in preset_keys or not changed:
        return
    given = ", ".join(f"{k}={v!r}" for k, v in _changing(getattr(run, changed[0])).items())
    setattr(run, NOTE, f"target_reward {run.target_reward:g} is the shipped preset's for {run.env} with its default "
                       f"settings, but {changed[0]} changes them ({given}): it may be out of reach; give your own with "
                       f"--target-reward R (target_reward= in Python, --set target_reward=null for none)")


def warn_preset_target(run: Any) -> None:
    """Warn (:class:`~canter.errors.CanterWarning`) with the note :func:`note_preset_target` kept on ``run``, if any."""
    note = getattr(run, NOTE, None)
    if note:
        warn(CanterWarning(note))
