"""Whether ``--render`` shows a window where there is no display: SDL (pygame, which gymnasium's envs draw with)
then falls back to a windowless video driver, and canter refuses in one line; SDL's own complaints on the way there
(``error: XDG_RUNTIME_DIR is invalid or not set in the environment.``, written by the C library to file descriptor 2
while pygame starts SDL) are held back so that the refusal is the only line. A recording's off-screen frames set ``SDL_VIDEODRIVER=dummy``
(:func:`set_offscreen_driver`); that driver is canter's, not taken for one the user chose."""
from __future__ import annotations

import functools
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from canter.errors import CanterError

#: the SDL video driver :func:`set_offscreen_driver` put in ``SDL_VIDEODRIVER`` for off-screen frames (None: it set
#: none)
_SDL_DRIVER_SET: str | None = None


def no_display() -> bool:
    """Whether neither ``DISPLAY`` nor ``WAYLAND_DISPLAY`` names a display."""
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def set_offscreen_driver() -> None:
    """Put SDL's ``dummy`` driver in ``SDL_VIDEODRIVER`` for off-screen frames (no display needed, SDL quiet), unless
    the variable is there already; the driver set is noted as canter's (:func:`chosen_sdl_driver`)."""
    global _SDL_DRIVER_SET
    if "SDL_VIDEODRIVER" not in os.environ:
        os.environ["SDL_VIDEODRIVER"] = _SDL_DRIVER_SET = "dummy"


def chosen_sdl_driver() -> str | None:
    """The SDL video driver the user chose with ``SDL_VIDEODRIVER``, or None: none, or the one canter set for an
    earlier recording's off-screen frames in this process (a window drawn to it is still unseen)."""
    chosen = os.environ.get("SDL_VIDEODRIVER")
    return None if chosen in (None, "", _SDL_DRIVER_SET) else chosen


def windowless_sdl_driver() -> str | None:
    """The SDL video driver pygame's display fell back to where it shows nothing (``offscreen``, ``dummy``), or None:
    pygame not in use, a driver that shows a window, or one the user chose (:func:`chosen_sdl_driver`)."""
    pygame = sys.modules.get("pygame")
    if pygame is None or chosen_sdl_driver() is not None or not pygame.display.get_init():
        return None
    driver = pygame.display.get_driver()
    return driver if driver in ("offscreen", "dummy") else None


class NoWindow(CanterError):
    """The refusal of ``--render`` where pygame drew to a windowless SDL driver (:func:`drew_nowhere`)."""


def drew_nowhere(env_id: str) -> NoWindow | None:
    """The error for ``--render`` of an env that has rendered, where there is no display and pygame drew to a
    windowless SDL driver (:func:`windowless_sdl_driver`), else None."""
    if not no_display():
        return None
    driver = windowless_sdl_driver()
    if driver is None:
        return None
    return NoWindow(f"--render opened no window for '{env_id}': there is no display (DISPLAY is not set), "
                    f"so SDL drew to its '{driver}' driver; record the episodes with --video-dir instead")


class _Held:
    """Standard error (file descriptor 2) held in a temporary file while SDL starts (:meth:`wrap`), to be written out
    or dropped at the end (:meth:`release`). Without a temporary file to hold it in (no writable temporary directory),
    nothing is held."""

    def __init__(self) -> None:
        self.file: Any = None
        self.unusable = False
        self.released = False

    def wrap(self, start: Callable[..., Any]) -> Callable[..., Any]:
        """``start`` (a pygame function that starts SDL) with descriptor 2 held while it runs; after
        :meth:`release`, ``start`` as it is (a module imported inside the block, ``from pygame.display import
        init``, keeps the wrapper: it raised on the closed file, or held into a file never written out)."""

        @functools.wraps(start)
        def held_start(*args: Any, **kwargs: Any) -> Any:
            if self.released:
                return start(*args, **kwargs)
            if self.file is None and not self.unusable:
                try:
                    self.file = tempfile.TemporaryFile()
                except (OSError, ValueError):  # no temporary file to hold it in
                    self.unusable = True
            try:
                sys.stderr.flush()
                saved = os.dup(2)
            except (OSError, ValueError, AttributeError):  # no descriptor 2 to hold
                saved = None
            if self.file is None or saved is None:
                return start(*args, **kwargs)
            os.dup2(self.file.fileno(), 2)
            try:
                return start(*args, **kwargs)
            finally:
                os.dup2(saved, 2)
                os.close(saved)

        return held_start

    def release(self, write: bool) -> None:
        """Write what was held to descriptor 2 (``write``) or drop it; close the file. Nothing is held after."""
        self.released = True
        if self.file is None:
            return
        with self.file:
            self.file.seek(0)
            text = self.file.read()
        if text and write:
            os.write(2, text)


#: the pygame functions that start SDL (where its complaints of no display are written): (submodule, function)
_SDL_STARTS = (("", "init"), ("display", "init"), ("display", "set_mode"))


@contextmanager
def sdl_complaints_held(mode: str | None) -> Iterator[None]:
    """Hold what SDL writes to standard error (file descriptor 2) while pygame starts it (``pygame.init``,
    ``pygame.display.init``, ``pygame.display.set_mode``) as the env inside is made and renders its first frame, for
    ``--render`` (``mode`` ``human``) without a display or an SDL driver the user chose (:func:`chosen_sdl_driver`):
    where that ends in the refusal of a windowless driver (:func:`drew_nowhere`), what was held (SDL's complaints of
    no display) is dropped; otherwise it is written out at the end. Only SDL's start is held: what the env itself
    writes there (its own error before it crashes the process) reaches standard error as it is written. Elsewhere,
    or without pygame, nothing is held."""
    if mode != "human" or not no_display() or chosen_sdl_driver() is not None:
        yield
        return
    try:
        import pygame
    except Exception:  # noqa: BLE001 - no pygame (or one that fails to import): nothing of SDL's to hold
        yield
        return
    held = _Held()
    patched = []
    for part, name in _SDL_STARTS:
        owner = getattr(pygame, part, None) if part else pygame
        start = getattr(owner, name, None)
        if callable(start):
            setattr(owner, name, held.wrap(start))
            patched.append((owner, name, start))
    refused = False
    try:
        yield
    except NoWindow:
        refused = True  # the refusal says why: SDL's lines add nothing
        raise
    finally:
        for owner, name, start in patched:
            setattr(owner, name, start)
        held.release(write=not refused)
