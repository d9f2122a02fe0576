"""ale-py's Atari envs in Gymnasium's registry. Apart from :mod:`canter.envs.atari`, which re-exports
:func:`register_ale`, so that ``canter list`` can name the Atari presets' env ids without importing
:mod:`canter.envs` (whose package imports torch)."""
from __future__ import annotations


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
