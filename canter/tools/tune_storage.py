"""The Optuna storage of ``canter tune``: opening its URL (:func:`open_storage`), showing it without its password
(:func:`shown_url`), in-memory SQLite (:func:`in_memory`), and the SQLite file a refused call must not leave
behind (:func:`new_sqlite_file`, :func:`discard_storage`)."""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from canter.errors import CanterError, require


def shown_url(url: str) -> str:
    """``url`` as tune prints it and writes it into ``best.yaml``: a password in it as ``***`` (SQLAlchemy's
    ``render_as_string(hide_password=True)``), so that a shared best.yaml or a log holds no credential; a URL
    without a password, or one SQLAlchemy cannot parse, as given."""
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - not a URL: open_storage says so in its own line
        return url
    return url if parsed.password is None else parsed.render_as_string(hide_password=True)


def in_memory(url: str) -> bool:
    """Whether ``url`` is an in-memory SQLite database (``sqlite://``, ``sqlite:///:memory:``), which lives in one
    storage object of one process: another process (a ``--jobs`` worker) or a later run cannot see it."""
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - not a URL: open_storage says so in its own line
        return False
    return parsed.get_backend_name() == "sqlite" and (parsed.database in (None, "", ":memory:")
                                                       or parsed.query.get("mode") == "memory")


def new_sqlite_file(url: str) -> Path | None:
    """The file of a SQLite ``url`` (``sqlite:///PATH``) that does not exist yet, which opening the storage creates;
    None for an existing file, an in-memory database, a ``file:`` URI or another database."""
    try:
        from sqlalchemy.engine import make_url

        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - not a URL: open_storage says so in its own line
        return None
    if parsed.get_backend_name() != "sqlite" or in_memory(url) or "uri" in parsed.query or not parsed.database:
        return None
    path = Path(parsed.database)
    return None if path.exists() else path


def open_storage(url: str) -> Any:
    """An Optuna ``RDBStorage`` on ``url`` (with a heartbeat, so that a killed run's trials are marked failed later);
    a URL it cannot open is one line (CanterError)."""
    optuna = require("optuna", "tune", "canter tune")
    # no heartbeat in memory: no later run sees a stale trial there, and the heartbeat's thread would get a
    # database of its own (SQLAlchemy gives each thread its own in-memory SQLite connection)
    heartbeat = {} if in_memory(url) else {"heartbeat_interval": 60, "grace_period": 180}
    try:
        with warnings.catch_warnings():  # the heartbeat (stale RUNNING trials -> FAIL on resume) is "experimental"
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.storages.RDBStorage(url, **heartbeat)
    except Exception as exc:  # noqa: BLE001 - sqlalchemy/optuna raise many kinds; one line for the user
        raise CanterError(f"cannot open Optuna storage '{shown_url(url)}': {str(exc).splitlines()[0]}") from None


def discard_storage(storage: Any, path: Path | None) -> None:
    """Close ``storage`` (an ``RDBStorage``, or None) and remove ``path``, the SQLite file that opening it created
    (with its journal files), as a refused call leaves nothing behind."""
    engine = getattr(storage, "engine", None)
    if engine is not None:
        engine.dispose()
    if path is None:
        return
    for p in (path, *(path.with_name(path.name + s) for s in ("-journal", "-wal", "-shm"))):
        p.unlink(missing_ok=True)


def fail_stale_trials(study: Any) -> None:
    """Mark the RUNNING trials whose heartbeat stopped over the storage's grace period ago (a killed
    ``canter tune``) as failed, as Optuna does only when a new trial starts."""
    import optuna

    with warnings.catch_warnings():  # "experimental"
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
