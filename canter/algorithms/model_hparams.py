"""The hyperparameters of the networks that the algorithms' configs share: ``encoder`` and ``critic_net_arch``
(their :func:`~canter.config.hp` declarations and the model keyword arguments they give), the ``net_arch`` checks
and the widest layer. :mod:`canter.algorithms.base` re-exports these names."""
from __future__ import annotations

from typing import Any

from canter.errors import CanterError


def encoder_hp() -> Any:
    """The ``encoder`` hyperparameter of algorithms whose models take an observation encoder
    (:func:`canter.models.cnn.make_encoder`)."""
    from canter.config import hp

    return hp("auto", "observation encoder: auto (nature CNN for uint8 images, impala below 36 pixels a side, "
                      "multi for Dict/Tuple observations with images, flat otherwise), nature, nature_pool (nature pooled to "
                      "at most 7x7, for large frames), impala, flat, multi, or module:Class")


def encoder_kwargs(config: Any) -> dict[str, Any]:
    """``{"encoder": name}`` when the config names an encoder other than ``auto`` (models default
    to ``auto``; leaving it out keeps custom models without an ``encoder`` argument working)."""
    name = getattr(config, "encoder", "auto")
    return {} if name == "auto" else {"encoder": name}


def critic_arch_hp(sb3_key: str) -> Any:
    """The ``critic_net_arch`` hyperparameter of the actor-critic algorithms: the critic's hidden layers (null:
    ``net_arch``'s). ``sb3_key`` is the critic's key in Stable-Baselines3's ``net_arch`` mapping (``vf`` for a
    value network, ``qf`` for Q networks); the config class names it as ``sb3_critic_key``, and
    :func:`canter.config_values.sb3_net_arch` reads such a mapping into ``net_arch`` and ``critic_net_arch``."""
    from canter.config import hp

    return hp(None, f"hidden layer sizes of the critic{'s' if sb3_key == 'qf' else ''} (null: net_arch's); "
                    f"Stable-Baselines3's net_arch=dict(pi=[...], {sb3_key}=[...]) is net_arch pi, critic_net_arch "
                    f"{sb3_key}", low=1)


def critic_arch_kwargs(config: Any) -> dict[str, Any]:
    """``{"critic_net_arch": widths}`` when the config gives the critic hidden layers of its own (left out for
    null, so models without a ``critic_net_arch`` argument, a user's, keep working)."""
    widths = getattr(config, "critic_net_arch", None)
    return {} if widths is None else {"critic_net_arch": list(widths)}


def check_net_archs(config: Any) -> None:
    """Refuse (CanterError) an empty ``net_arch`` or ``critic_net_arch`` (its null is net_arch's) of ``config``."""
    for name in ("net_arch", "critic_net_arch"):
        widths = getattr(config, name, None)
        if widths is not None and not widths:
            raise CanterError(f"'hparams.{name}' needs at least one hidden layer"
                              + (" (null: net_arch's)" if name == "critic_net_arch" else ""))


def widest_layer(config: Any) -> int:
    """The widest hidden layer an algorithm config asks for (``net_arch``, ``critic_net_arch``; 64 without
    either), which :func:`threads_for` picks the thread count from."""
    widths = [*(getattr(config, "net_arch", None) or []), *(getattr(config, "critic_net_arch", None) or [])]
    return max(widths or [64])
