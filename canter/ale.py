"""ale-py's Atari envs in Gymnasium's registry. Apart from :mod:`canter.envs.atari`, which re-exports
:func:`register_ale`, :func:`is_atari` and :func:`looks_like_atari`, so that ``canter list`` can name the Atari
presets' env ids, and ``canter train ALGO --help --env ENV`` find the presets, without importing
:mod:`canter.envs` (whose package imports torch)."""
from __future__ import annotations

from typing import Any


def register_ale() -> bool:
    """Register ale-py's envs with gymnasium; False when ale-py is not installed."""
    try:
        import ale_py
    except ImportError:
        return False
    import gymnasium as gym

    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)  # no banner on every env creation
    gym.register_envs(ale_py)
    return True


def registered_spec(env_id: str) -> Any:
    """``gymnasium.spec(env_id)``, registering ale-py's envs first when gymnasium does not know the id yet:
    they are registered when ale-py is imported, which a process that has made no env has not done (a
    Minari dataset of ``ALE/Pong-v5`` read back, ``canter collect --from-replay``). A ``module:Id`` imports
    its module first and looks up ``Id``, as ``gymnasium.make`` does (``gymnasium.spec`` does neither).
    Raises gymnasium's error for an id that is still unknown, or a module that cannot be imported."""
    import importlib

    import gymnasium as gym

    module, _, bare = env_id.rpartition(":")
    if module:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise gym.error.Error(f"cannot import module '{module}' that should register '{bare}': {exc}") from None
        env_id = bare
    if env_id not in gym.registry:
        register_ale()
    return gym.spec(env_id)


def looks_like_atari(env_id: str) -> bool:
    """True for ids that name an ALE game (``ALE/...``, ``...NoFrameskip-v4``, ``...Deterministic-v4``), also
    after a ``module:`` prefix (``ale_py:ALE/Pong-v5``); and for ale-py's plain ``<Game>-v0`` / ``<Game>-v4``
    ids, which need ale-py's registry to tell them from other envs (``Pong-v4`` but not ``CartPole-v0``)."""
    env_id = env_id.split(":", 1)[-1]
    if env_id.startswith("ALE/") or env_id.endswith(("NoFrameskip-v4", "Deterministic-v4", "NoFrameskip-v0")):
        return True
    if env_id.endswith(("-v0", "-v4")) and "/" not in env_id:
        return is_atari(env_id)
    return False


def is_atari(env_id: str) -> bool:
    """True when ``env_id`` (or the id after its ``module:`` prefix) is an ALE env (ale-py's ``AtariEnv``).

    An id that gymnasium does not know yet registers ale-py's envs first: they are registered when ale-py is
    imported, which a process that has made no env has not done (``canter collect RUN --from-replay`` took
    an Atari run's frame-once replay buffer for one of whole stacks and refused it)."""
    import gymnasium as gym

    try:
        spec = registered_spec(env_id.split(":", 1)[-1])
    except gym.error.Error:
        return False
    return "ale_py" in str(spec.entry_point)


def retired_id_hint(env_id: str) -> str | None:
    """For an ALE-style id that ale-py (0.9 on) does not register, ``<Game>Deterministic-v4`` or a ``-ram`` id
    (``Pong-ramNoFrameskip-v4``, ``ALE/Pong-ram-v5``), what to use instead when ``<Game>NoFrameskip-v4`` is registered;
    else None. Their close-match suggestions alone misled: ``PongDeterministic-v4`` got 'Tennis-v4', 'Phoenix-v4'."""
    import re

    import gymnasium as gym

    found = re.fullmatch(r"(?:ALE/)?([A-Z][A-Za-z]*?)(Deterministic|-ram(?:Deterministic|NoFrameskip)?)-v[045]", env_id)
    if not found or f"{found[1]}NoFrameskip-v4" not in gym.registry:
        return None
    game = found[1]
    why = ("ale-py registers no Deterministic ids; canter's Atari preprocessing skips 4 frames on every ALE id, so "
           if found[2] == "Deterministic" else
           "ale-py registers no -ram ids, and canter's Atari envs give screen frames (RAM observations are not "
           "supported); ")
    return f"{why}'{game}NoFrameskip-v4' or 'ALE/{game}-v5' is the game"
