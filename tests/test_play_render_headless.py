"""``canter play --render`` where there is no display.

Without ``DISPLAY`` (an ssh session, a server), SDL falls back to its ``offscreen`` driver: pygame's "window"
drew nowhere, and ``canter play RUN --render`` played its episodes, printed their returns and exited 0 without
showing anything, though ``--render`` says "open a window". It is now one line saying there is no display and
that ``--video-dir`` records the episodes. A driver the user picks (``SDL_VIDEODRIVER``) is left to them.
"""
from __future__ import annotations

import pytest

from canter.errors import CanterError
from canter.play import make_render_env


@pytest.fixture
def no_display(monkeypatch):
    """No display, and no SDL video driver chosen (the tests' conftest picks 'dummy')."""
    pytest.importorskip("pygame")
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER"):
        monkeypatch.setenv(name, "")  # recorded, so that what the test changes is undone after it
        monkeypatch.delenv(name)
    # and canter's note of having set it (canter.render_window.set_offscreen_driver): undone with it
    monkeypatch.setattr("canter.render_window._SDL_DRIVER_SET", None)


def test_render_without_a_display_is_refused_instead_of_drawing_nowhere(no_display):
    with pytest.raises(CanterError, match=r"--render opened no window for 'CartPole-v1': there is no display "
                                          r"\(DISPLAY is not set\).*record the episodes with --video-dir"):
        make_render_env("CartPole-v1", "human")
    import pygame

    assert not pygame.display.get_init()  # the env was closed


def test_a_driver_the_user_chose_is_kept(no_display, monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    make_render_env("CartPole-v1", "human").close()


def test_recording_without_a_display_still_works(no_display):
    make_render_env("CartPole-v1", "rgb_array").close()


def test_render_of_an_env_without_the_human_mode_is_refused():
    """BitFlipping-v0 renders text only (render_modes ['ansi']): `canter play RUN --render` played its episodes
    without a window, and without a word, exit code 0."""
    with pytest.raises(CanterError, match=r"'BitFlipping-v0' cannot render in a window \(its render modes: ansi\): "
                                          r"--render needs an env that renders in render_mode 'human'"):
        make_render_env("BitFlipping-v0", "human")


def test_render_after_a_recording_in_the_same_process_is_still_refused(no_display):
    """A recording (canter.play's video_dir, --record-every's check) sets SDL_VIDEODRIVER=dummy for its off-screen
    frames where there is no display; a later --render in the same process took it for the user's choice, and the
    episodes played unseen in a window drawn to 'dummy'."""
    make_render_env("CartPole-v1", "rgb_array").close()
    with pytest.raises(CanterError, match=r"--render opened no window for 'CartPole-v1'.*'dummy' driver"):
        make_render_env("CartPole-v1", "human")


def test_sdls_own_complaint_does_not_come_before_the_refusal(no_display, monkeypatch, capfd):
    """With XDG_RUNTIME_DIR unset too, SDL wrote 'error: XDG_RUNTIME_DIR is invalid or not set in the environment.'
    to standard error before canter's one-line refusal; what SDL writes on the way to the refusal is now dropped."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", "")
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    with pytest.raises(CanterError, match=r"--render opened no window"):
        make_render_env("CartPole-v1", "human")
    assert "XDG_RUNTIME_DIR" not in capfd.readouterr().err


def _sdl_start_writes(monkeypatch, text: bytes) -> None:
    """pygame.display.init, as SDL's start: it writes ``text`` to file descriptor 2."""
    import os

    import pygame

    monkeypatch.setattr(pygame.display, "init", lambda: os.write(2, text))


def test_what_is_held_is_written_out_unless_the_refusal_explains_it(no_display, monkeypatch, capfd):
    """sdl_complaints_held holds file descriptor 2 only while pygame starts SDL, for --render without a display; it
    drops what it held where the run is refused for drawing nowhere, and writes it out otherwise (another error, or
    no error)."""
    import pygame

    from canter.render_window import NoWindow, sdl_complaints_held

    _sdl_start_writes(monkeypatch, b"kept\n")
    with sdl_complaints_held("human"):
        pygame.display.init()
    with pytest.raises(CanterError), sdl_complaints_held("human"):
        pygame.display.init()
        raise CanterError("another error")
    _sdl_start_writes(monkeypatch, b"dropped\n")
    with pytest.raises(NoWindow), sdl_complaints_held("human"):
        pygame.display.init()
        raise NoWindow("no window")
    _sdl_start_writes(monkeypatch, b"not held\n")
    with sdl_complaints_held("rgb_array"):
        pygame.display.init()
    assert capfd.readouterr().err == "kept\nkept\nnot held\n"


def test_the_driver_a_recording_set_is_not_taken_for_the_users_when_holding(no_display, monkeypatch, capfd):
    """The SDL_VIDEODRIVER=dummy a recording sets (as in the test above) does not stop the holding: the refusal that
    follows it is still the only line; an SDL_VIDEODRIVER the user set is theirs, and nothing is held."""
    import pygame

    from canter.render_window import NoWindow, sdl_complaints_held

    make_render_env("CartPole-v1", "rgb_array").close()
    _sdl_start_writes(monkeypatch, b"dropped\n")
    with pytest.raises(NoWindow), sdl_complaints_held("human"):
        pygame.display.init()
        raise NoWindow("no window")
    monkeypatch.setattr("canter.render_window._SDL_DRIVER_SET", None)  # the same variable, now the user's
    _sdl_start_writes(monkeypatch, b"not held\n")
    with pytest.raises(NoWindow), sdl_complaints_held("human"):
        pygame.display.init()
        raise NoWindow("no window")
    assert capfd.readouterr().err == "not held\n"


def test_sdls_own_complaint_does_not_come_before_the_refusal_of_a_render_mode_in_env_kwargs(no_display, monkeypatch,
                                                                                           capfd):
    """A render_mode 'human' given in env_kwargs (a run trained with it) is refused as --render's is; the holding read
    only --render's mode, so SDL's 'XDG_RUNTIME_DIR is invalid or not set' line still came before the refusal."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", "")
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    with pytest.raises(CanterError, match=r"--render opened no window"):
        make_render_env("CartPole-v1", None, env_kwargs={"render_mode": "human"})
    assert "XDG_RUNTIME_DIR" not in capfd.readouterr().err


def test_render_without_a_usable_temporary_directory_is_still_the_one_line_refusal(no_display, monkeypatch):
    """Holding SDL's complaints needs a temporary file; where none can be made (no writable temporary directory) the
    refusal was tempfile's FileNotFoundError traceback: nothing is held there."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", "/nonexistent/canter-no-tmp")
    with pytest.raises(CanterError, match=r"--render opened no window"):
        make_render_env("CartPole-v1", "human")
