"""Connecting to Ray: a private local instance for the run, or an existing cluster.

Ray is imported here and only here (and only when a run asks for explorers). A local
instance is bound to the loopback interface, has no dashboard and reports no usage statistics.
"""
from __future__ import annotations

import logging
import os
import socket
from typing import Any

from canter.errors import CanterError, require

_LOOPBACK = ("127.", "localhost", "::1")


def _is_loopback(address: str) -> bool:
    return address.startswith(_LOOPBACK)


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast with one line when nothing listens at ``host:port`` (Ray itself retries for minutes)."""
    host, sep, port = address.rpartition(":")
    if address.startswith("ray://") or not sep or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise CanterError(
            f"no Ray cluster at '{address}' ({exc.strerror or exc}); start one with 'ray start --head' "
            "or leave out --ray-address to start a local Ray for the run"
        ) from None


def _use_token_if_available() -> None:
    """Send the local Ray auth token (``ray start`` enables token auth when one exists) to the cluster.

    Ray does this itself for ``ray start`` and for new local instances, but not for a driver that
    joins a cluster, which then fails with "Authentication token is missing". ``RAY_AUTH_MODE``
    set by the user wins.
    """
    if "RAY_AUTH_MODE" in os.environ:
        return
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # another Ray version: nothing to do
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def _loopback_if_imported_earlier() -> None:
    """Apply ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` also when Ray was imported before it was set.

    Ray reads the variable once, at import, into ``ray_constants.ENABLE_RAY_CLUSTER``; a process that
    imported Ray first (a user's ``import ray``) would otherwise start the private instance on the
    machine's network address (``127.0.0.1`` is resolved to it) and listen on every interface.
    """
    try:
        from ray._private import ray_constants
    except ImportError:  # another Ray layout: nothing we can do here
        return
    if getattr(ray_constants, "ENABLE_RAY_CLUSTER", False):
        ray_constants.ENABLE_RAY_CLUSTER = False


def connect(address: str | None = None) -> tuple[Any, bool]:
    """Import Ray and connect; returns ``(ray, owns_connection)``.

    ``address`` None starts a local Ray instance for this run (loopback only); ``"auto"`` or
    ``host:port`` joins a cluster started with ``ray start --head``. If this process is already
    connected, that connection is used and left open at the end.
    """
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if address is None or _is_loopback(address):
        # read by Ray at import: every listener binds to 127.0.0.1 and addresses stay on loopback
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray = require("ray", "distributed", "--explorers")
    if ray.is_initialized():
        return ray, False
    if os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") == "0":
        _loopback_if_imported_earlier()
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
    try:
        if address is None:
            ray.init(address="local", num_cpus=os.cpu_count(), **kwargs)
        else:
            _check_reachable(address)
            _use_token_if_available()
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    except CanterError:
        raise
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = "start a local Ray instance" if address is None else f"connect to Ray at '{address}'"
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise CanterError(f"cannot {where}: {first}") from None
    return ray, True


def disconnect(ray: Any, owns_connection: bool) -> None:
    """Shut down the local instance, or disconnect from a joined cluster (which keeps running)."""
    if owns_connection and ray.is_initialized():
        ray.shutdown()
