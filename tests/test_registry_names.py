"""Names the registry refuses at registration: those that lookup never reaches."""
import pytest
import torch.nn as nn

from canter import register


def test_an_encoder_named_auto_is_refused_at_registration():
    """@register("encoder", "auto") was accepted and listed by 'canter list' as the user's, but encoder: auto
    (every algorithm's default) picks one of canter's encoders without looking the name up: the user's class was
    silently never built."""
    from canter.registry import _REGISTRY

    class Auto(nn.Module):
        """An encoder of one's own, meant to replace the default."""

    with pytest.raises(ValueError, match="cannot register encoder 'auto': encoder: auto picks one of canter's"):
        register("encoder", "auto")(Auto)
    assert "auto" not in _REGISTRY["encoder"]
    register("encoder", "test_auto_like")(Auto)  # any other name is taken
    _REGISTRY["encoder"].pop("test_auto_like")
