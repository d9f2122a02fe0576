"""Warnings held back while an env is made for ``canter play`` / ``eval`` / ``collect``, and shown after it, but for
gymnasium's warning that the env is made with a render mode it does not list, where canter's one-line error says it
(or the env made next gives it again); and warnings taken to be given again in other words (a multi-policy run's
members'), without resetting Python's once-per-place record as ``catch_warnings`` does."""
from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from canter.errors import TAKING, CanterError


@contextmanager
def unlisted_render_mode_held(keep: bool = True) -> Iterator[None]:
    """Hold back the warnings shown inside, and show them at its end, but for gymnasium's warning that an env is
    made with a render mode it does not list where a :class:`CanterError` ends it (the error says why the mode cannot
    render; the warning came before it, on two lines) or where not ``keep`` (an env made to read its spaces, before
    the one that is checked).

    The warnings pass Python's filters as they are given (only ``showwarning`` is swapped, no ``catch_warnings``,
    whose exit resets Python's record of the warnings already shown once per place: the next env's same warning was
    shown a second time); a dropped one is taken out of that record, so that the next env's is shown."""
    held: list[tuple[Any, ...]] = []
    shown = warnings.showwarning
    failed = False

    def hold(message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        held.append((message, category, filename, lineno, file, line, _warning_registry(filename, lineno)))

    warnings.showwarning = hold
    try:
        yield
    except CanterError:
        failed = True
        raise
    finally:
        if warnings.showwarning is hold:  # (else the block installed one of its own: left as it is)
            warnings.showwarning = shown
        for message, category, filename, lineno, file, line, registry in held:
            unlisted = "render_mode=" in str(message) and "not in the possible render_modes" in str(message)
            if not (unlisted and (failed or not keep)):
                warnings.showwarning(message, category, filename, lineno, file, line)
            elif registry is not None:  # not shown: the next env made with that mode warns (eval's)
                registry.pop((str(message), category, lineno), None)


@contextmanager
def warnings_taken(into: list[warnings.WarningMessage]) -> Iterator[None]:
    """Take every warning given inside into ``into`` (as ``catch_warnings(record=True)`` with ``simplefilter("always")``
    would: a filter's ``error`` or ``ignore`` applies to the words the caller gives them in) and show none of them:
    the caller gives them again in its own words (a multi-policy run's members' warnings, named by policy).

    No ``catch_warnings``, whose exit resets Python's record of the warnings already shown once per place (an env's
    constructor's warning was shown again by the next env made in the process): ``showwarning`` is swapped and an
    ``always`` filter put first in ``warnings.filters`` in place, then taken out, without telling Python the filters
    changed (an ``always`` warning writes nothing to that record, so none is left stale). Python drops a warning
    already in that record (shown once at its place) before any filter: canter's own (:func:`canter.errors.warn`) are
    taken directly, so that one said before in the same words is still taken; another library's is not."""
    shown = warnings.showwarning
    every = ("always", None, Warning, None, 0)

    def take(message: Any, category: type, filename: str, lineno: int, file: Any = None, line: Any = None) -> None:
        into.append(warnings.WarningMessage(message, category, filename, lineno, file, line))

    warnings.showwarning = take
    warnings.filters.insert(0, every)
    TAKING.append(into)
    try:
        yield
    finally:
        for i in reversed(range(len(TAKING))):  # by identity: two lists still empty are equal
            if TAKING[i] is into:
                del TAKING[i]
                break
        for i, entry in enumerate(warnings.filters):
            if entry is every:
                del warnings.filters[i]
                break
        if warnings.showwarning is take:  # (else the block installed one of its own: left as it is)
            warnings.showwarning = shown


def _warning_registry(filename: str, lineno: int) -> dict | None:
    """The once-per-place record (``__warningregistry__``) of the code that gave the warning being shown, which
    ``warnings.warn`` keeps in the globals of the frame at ``filename``, ``lineno`` (one of the callers)."""
    frame = sys._getframe(2)
    while frame is not None and not (frame.f_code.co_filename == filename and frame.f_lineno == lineno):
        frame = frame.f_back
    return None if frame is None else frame.f_globals.get("__warningregistry__")
