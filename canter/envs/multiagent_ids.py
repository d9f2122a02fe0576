"""Multi-agent env ids and agents: ``pettingzoo:MODULE`` ids and their factories (with hints for a module that
cannot be imported), agent types, the grouping of agents into policies, and the policy-mode error."""
from __future__ import annotations

import contextlib
import difflib
import importlib
import importlib.util
import re
from collections.abc import Iterator
from typing import Any

from canter.errors import CanterError, require
from canter.registry import import_failure, submodules


PREFIX = "pettingzoo:"


def is_multiagent(env_id: str) -> bool:
    """Whether ``env_id`` names a PettingZoo parallel env (``pettingzoo:MODULE``)."""
    return env_id.startswith(PREFIX)


#: PettingZoo's env families whose dependencies its own extras install (``pip install 'pettingzoo[sisl]'``)
PETTINGZOO_FAMILIES = ("atari", "butterfly", "classic", "sisl")


def family_hint(module_name: str, exc: BaseException) -> str:
    """For a module of PettingZoo's env families that failed to import for a missing dependency (not a
    missing module of PettingZoo itself), ``"; ... pip install 'pettingzoo[FAMILY]'"``; else ``""``."""
    parts = module_name.split(".")
    missing = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
    if missing == "mpe2" and parts[0] == "mpe2":
        return "; MPE is the mpe2 package: pip install mpe2"
    if missing and len(parts) > 1 and missing == module_name and importlib.util.find_spec(parts[0]) is not None:
        return _game_hint(parts)  # a misspelled game or one of another version
    if len(parts) < 3 or parts[0] != "pettingzoo" or parts[1] not in PETTINGZOO_FAMILIES or not missing:
        return ""
    if missing.split(".")[0] == "pettingzoo":  # a misspelled game, not a missing dependency
        return ""
    return f"; PettingZoo's {parts[1]} envs need their dependencies: pip install 'pettingzoo[{parts[1]}]'"


def _game_hint(parts: list[str]) -> str:
    """``"; did you mean PACKAGE.GAME"`` (or the package's games) for a module ``parts`` its package lacks: the one
    closest name at a strict cutoff (another version of the game; the up to 3 at 0.5 that a mistyped module of the
    user's is answered with would name other games too), else PettingZoo's list of the package's games."""
    package = ".".join(parts[:-1])
    names = submodules(package)  # [] for a package that cannot import: no suggestion
    close = difflib.get_close_matches(parts[-1], names, n=1, cutoff=0.8)
    if close:
        return f"; did you mean {package}.{close[0]}"
    games = [n for n in names if re.search(r"_v\d+$", n)]  # PettingZoo's games are versioned modules
    return f"; {package}'s games: {', '.join(games)}" if parts[0] == "pettingzoo" and games else ""


def parallel_factory(env_id: str) -> Any:
    """The ``parallel_env`` factory of ``pettingzoo:MODULE`` (a clear error when it is missing)."""
    require("pettingzoo", "multiagent", "a PettingZoo env")
    module_name = env_id[len(PREFIX):]
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:
        hint = family_hint(module_name, exc)  # a game's own guess, where it has one: not a second (guess=False)
        error = import_failure(module_name, f" for env '{env_id}'", exc, guess=not hint)
        raise CanterError(f"{error}{hint}") from None
    factory = getattr(module, "parallel_env", None)
    if not callable(factory):
        raise CanterError(f"module '{module_name}' has neither a parallel_env() factory (PettingZoo's parallel API) "
                          f"nor an env() one (its turn-based AEC API), needed for env '{env_id}'")
    return factory


def agent_type(agent: str) -> str:
    """An agent's type: its name without a trailing ``_N`` (``adversary_0`` -> ``adversary``)."""
    return re.sub(r"_\d+$", "", agent)


def group_agents(agents: list[str], policies: str) -> dict[str, list[str]]:
    """Policy name -> its agents (in the env's order), for a ``policies`` mode; sorted by name. A policy is
    named by its agents' names as text (PettingZoo's agent IDs may be any hashable: ``0``, ``1``, ...)."""
    if policies in ("shared", "joint"):
        return {"shared": list(agents)}
    groups: dict[str, list[str]] = {}
    for agent in agents:
        groups.setdefault(agent_type(str(agent)) if policies == "type" else str(agent), []).append(agent)
    for name in groups:
        if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
            raise CanterError(f"agent name '{name}' cannot name a policy (letters, digits, '_' and '-' only)")
    return dict(sorted(groups.items()))



class PolicyModeError(CanterError):
    """The agents of a multi-agent env do not fit the policy mode (``policies``): the error names the setting
    that would fit, which training takes (``--set policies=...``); :attr:`acting` is the error for commands that
    act with a trained agent (eval, play, collect, ``canter.evaluate``), which take no such setting
    (:func:`trained_policies`), followed by :attr:`multi_policy` where the command takes a multi-policy run."""

    def __init__(self, message: str, acting: str, multi_policy: str = "") -> None:
        super().__init__(message)
        self.acting, self.multi_policy = acting, multi_policy


@contextlib.contextmanager
def trained_policies(multi_policy: bool = True) -> Iterator[None]:
    """Around making a multi-agent env for an agent that is trained already: a :class:`PolicyModeError` becomes
    its :attr:`~PolicyModeError.acting` error (no ``--set policies``, which those commands refuse), with the hint
    to act with a multi-policy run's checkpoint where the command takes one (``multi_policy``: not collect's)."""
    try:
        yield
    except PolicyModeError as exc:
        raise CanterError(exc.acting + (exc.multi_policy if multi_policy else "")) from None
