"""ale-py's Atari envs in Gymnasium's registry. Apart from :mod:`canter.envs.atari`, which re-exports
:func:`register_ale`, so that ``canter list`` can name the Atari presets' env ids without importing
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
    Minari dataset of ``ALE/Pong-v5`` read back, ``canter collect --from-replay``). Raises gymnasium's error
    for an id that is still unknown."""
    import gymnasium as gym

    if env_id not in gym.registry:
        register_ale()
    return gym.spec(env_id)
