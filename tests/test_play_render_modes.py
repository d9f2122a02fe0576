"""An env that declares no such render mode is refused in one line by canter play --video-dir / --render and
--record-every (:func:`canter.play.make_render_env`).

It was an AssertionError traceback from gymnasium's passive env checker ("With no render_modes, expects the
Env.render_mode to be None, actual value: rgb_array") on the first frame.
"""
from __future__ import annotations

import pytest

import odd_api_env  # noqa: F401 (registers NoRenderModes-v0)
from canter.errors import CanterError
from canter.play import make_render_env


@pytest.mark.parametrize("mode,need", [("rgb_array", "recording video needs"), ("human", "--render needs")])
def test_undeclared_render_mode_is_one_line(mode, need):
    with pytest.raises(CanterError) as info:
        make_render_env("odd_api_env:NoRenderModes-v0", mode)
    text = str(info.value)
    assert "\n" not in text, text
    assert f"'odd_api_env:NoRenderModes-v0' cannot render in render_mode '{mode}'" in text, text
    assert "render_modes" in text and need in text, text
