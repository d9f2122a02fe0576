"""``canter play --render`` without a display holds SDL's complaints of no display (tests/test_play_render_headless.py),
but only while pygame starts SDL: the whole make and first frame were held, so an env that wrote its own error and then
ended the process there (a native library's abort) said nothing at all, and what it wrote before canter's refusal of a
windowless driver was dropped with SDL's lines."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from canter.render_window import NoWindow, sdl_complaints_held

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def no_display(monkeypatch):
    """No display, and no SDL video driver chosen (the tests' conftest picks 'dummy')."""
    pytest.importorskip("pygame")
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setattr("canter.render_window._SDL_DRIVER_SET", None)


def test_what_the_env_writes_outside_sdls_start_is_not_held(no_display, capfd):
    """Descriptor 2 is the terminal's while the env runs its own code: its line is there before the refusal, and
    kept with it."""
    with pytest.raises(NoWindow), sdl_complaints_held("human"):
        os.write(2, b"the env's own line\n")
        assert capfd.readouterr().err == "the env's own line\n"  # written through, not held until the end
        raise NoWindow("no window")


def test_the_held_pygame_functions_are_put_back(no_display):
    import pygame

    starts = pygame.init, pygame.display.init, pygame.display.set_mode
    with pytest.raises(NoWindow), sdl_complaints_held("human"):
        assert pygame.display.init is not starts[1]
        raise NoWindow("no window")
    assert (pygame.init, pygame.display.init, pygame.display.set_mode) == starts


@pytest.mark.slow
def test_an_env_that_ends_the_process_in_its_first_frame_is_heard(no_display):
    """The env's 'fatal' line went into the held file and was lost with the process: exit code 3 and no word."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    code = ("from canter.play import make_render_env\n"
            "make_render_env('tests.crashing_render_env:CrashingRender-v0', 'human')\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3
    assert "simlib: fatal: GPU context lost" in done.stderr



def test_a_start_function_taken_while_held_is_plain_after_the_block(no_display, monkeypatch, capfd):
    """An env module imported while the env is made (gym.make imports its entry point there) that does
    ``from pygame.display import init`` keeps the held wrapper: after the block it raised 'ValueError: I/O operation
    on closed file' where it had run inside the block, and where it had not, it held standard error in a file that
    was never written out."""
    import pygame

    monkeypatch.setattr(pygame.display, "init", lambda: os.write(2, b"SDL starts\n"))
    with sdl_complaints_held("human"):
        from pygame.display import init as taken_unused  # such a module's top-level import
    with sdl_complaints_held("human"):
        from pygame.display import init as taken_used
        taken_used()
    assert capfd.readouterr().err == "SDL starts\n"  # held, then written out: no refusal
    taken_used()
    taken_unused()
    assert capfd.readouterr().err == "SDL starts\nSDL starts\n"
