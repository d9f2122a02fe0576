"""Connecting to Ray: a private local instance for the run, or an existing cluster.

Ray is imported here and only here (and only when a run asks for explorers). A local
instance is bound to the loopback interface, has no dashboard and reports no usage statistics.
"""
from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from typing import Any

from canter.errors import CanterError, require
from canter.utils import available_cpus

_LOOPBACK = ("127.", "localhost", "::1")


def ray_address_ok(address: str) -> bool:
    """Whether ``address`` has a form Ray joins: ``auto``, ``host:port`` or a ``ray://`` client address."""
    if address == "auto" or address.startswith("ray://"):
        return True
    host, sep, port = address.rpartition(":")
    return bool(sep and host.strip("[]") and port.isdigit())


def _is_loopback(address: str) -> bool:
    return address.startswith(_LOOPBACK)


def _auto_address() -> str | None:
    """The address ``ray.init(address="auto")`` would join: ``RAY_ADDRESS``, else the last ``ray start``'s
    (``/tmp/ray/ray_current_cluster``) or a running GCS; None when Ray cannot tell (it reports that)."""
    try:
        from ray._private.services import get_ray_address_from_environment
        found = get_ray_address_from_environment("auto", None)
    except Exception:  # noqa: BLE001 - another Ray layout, or no cluster found: ray.init reports it
        return None
    return found if isinstance(found, str) and found != "auto" else None


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """Fail fast with one line when nothing listens at ``host:port`` or ``ray://host:port`` (Ray itself
    retries for minutes; its client for 30 s, then warns); ``auto`` is checked at the address it stands
    for (a stale record of a stopped cluster, or a ``RAY_ADDRESS`` where nothing runs, would otherwise
    hang the same way)."""
    target = _auto_address() if address == "auto" else address
    if target is None:
        return
    host, sep, port = target.removeprefix("ray://").rpartition(":")  # a client address: its server's port
    if not sep or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            pass
    except OSError as exc:
        where = f"'{target}'" if target == address else f"'{target}' (where --ray-address auto points)"
        raise CanterError(
            f"no Ray cluster at {where} ({exc.strerror or exc}); start one with 'ray start --head' "
            "or leave out --ray-address to start a local Ray for the run"
        ) from None


#: Ray's switch for token authentication; ``ray.init`` of a new local instance sets it to ``token``
#: in this process (and writes ``~/.ray/auth_token``), and it outlives that instance
AUTH_MODE_ENV = "RAY_AUTH_MODE"
#: ``(value,)`` of RAY_AUTH_MODE before this process opened its connection (None: unset); restored
#: by :func:`disconnect`. Empty while canter holds no connection of its own.
_auth_before: list[str | None] = []


def _set_auth_mode(value: str | None) -> None:
    """Set (None: unset) RAY_AUTH_MODE for this process and make Ray's cached config read it again."""
    if value is None:
        os.environ.pop(AUTH_MODE_ENV, None)
    else:
        os.environ[AUTH_MODE_ENV] = value
    try:
        from ray._raylet import AuthenticationTokenLoader, Config
    except ImportError:  # another Ray layout: it reads the variable when it next starts
        return
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def cluster_uses_token_auth(address: str) -> bool | None:
    """Whether the Ray cluster at ``host:port`` requires token authentication: one request to its
    GCS without a token (refused at once by a cluster that requires one). None when it cannot tell
    (``auto``, ``ray://`` addresses, another Ray version, or another error)."""
    if address == "auto" or address.startswith("ray://") or AUTH_MODE_ENV in os.environ:
        return None  # with the variable set, this process's requests would carry its setting
    try:
        from ray._raylet import GcsClient
        from ray.exceptions import AuthenticationError
    except ImportError:
        return None
    try:
        GcsClient(address=address).internal_kv_get(b"canter-auth-probe", None, timeout=5)
    except AuthenticationError:
        return True
    except Exception:  # noqa: BLE001 - any other failure: unknown; ray.init reports it
        return None
    return False


def _match_cluster_auth(address: str) -> None:
    """Turn on token authentication for this driver when the cluster at ``address`` uses it.

    Ray does this itself for ``ray start`` and for new local instances, but not for a driver that
    joins a cluster, which then fails with "Authentication token is missing". The reverse mismatch
    is worse: a driver in token mode joining a cluster without it connects, but the cluster's calls
    back into the driver carry no token, the driver refuses them, and every actor it creates dies
    before it runs. So the cluster is asked first (:func:`cluster_uses_token_auth`), and a local
    token (``~/.ray/auth_token``) is used only when the cluster wants one or cannot tell.
    ``RAY_AUTH_MODE`` set by the user wins.
    """
    if AUTH_MODE_ENV in os.environ or cluster_uses_token_auth(address) is False:
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
    given = address
    if address == "auto":  # the address it stands for: a loopback cluster is joined on loopback, and asked
        address = _auto_address() or "auto"  # whether it wants a token (as auto, neither: Ray resolved 127.0.0.1
        # to the machine's address, where a loopback cluster does not listen, and retried for minutes; and a
        # local token went to a cluster without authentication, whose explorers then died)
    if address is None or _is_loopback(address):
        # read by Ray at import: every listener binds to 127.0.0.1 and addresses stay on loopback
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray = require("ray", "distributed", "--explorers")
    if ray.is_initialized():
        return ray, False
    if os.environ.get("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER") == "0":
        _loopback_if_imported_earlier()
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
    _auth_before[:] = [os.environ.get(AUTH_MODE_ENV)]
    try:
        with _no_native_crash_handler(), _signals_held() as held:
            if address is None:
                ray.init(address="local", num_cpus=available_cpus(), **kwargs)
            else:
                _check_reachable(given)
                _match_cluster_auth(address)
                ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    except CanterError:
        _restore_auth_mode()
        raise
    except (ConnectionError, RuntimeError, ValueError) as exc:
        _restore_auth_mode()
        where = "start a local Ray instance" if address is None else f"connect to Ray at '{address}'"
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise CanterError(f"cannot {where}: {first}") from None
    _python_sigterm_handler()
    if held:  # a signal came while Ray started; now that it has, the handler in force takes it
        try:
            signal.raise_signal(held[0])
        except BaseException:
            disconnect(ray, True)
            raise
    return ray, True


@contextlib.contextmanager
def _signals_held() -> Iterator[list[int]]:
    """Hold a SIGTERM or Ctrl-C (SIGINT) that arrives while ``ray.init`` (or ``ray.shutdown``, in
    :func:`disconnect`) runs (the yielded list records them) until it returns.

    ``ray.init`` installs a SIGTERM handler that calls ``sys.exit`` and then starts Ray's processes and
    builds the driver's core worker (seconds on a loaded machine). A ``SystemExit`` or
    ``KeyboardInterrupt`` raised in the middle of that left Ray half started: the process crashed on its
    way out (exit code 139) or left Ray's agent processes running for a minute. The handlers in force when
    it returns (for SIGTERM the one ``ray.init`` asks for) are installed then, and :func:`connect` hands
    them the held signals. A second signal acts at once. Likewise a Ctrl-C in the middle of ``ray.shutdown``
    (a second Ctrl-C, "quit now", while a stopped run shut its Ray down) left Ray's dashboard and runtime-env
    agents running, orphaned, for 1-2 minutes.
    """
    held: list[int] = []
    try:
        from ray._private import utils as ray_utils
        set_handler = ray_utils.set_sigterm_handler
    except (ImportError, AttributeError):  # another Ray layout: its own handler acts at once
        set_handler = None
    if set_handler is None or threading.current_thread() is not threading.main_thread():
        yield held
        return
    wanted: list[Any] = []  # the SIGTERM handler(s) ray.init set

    def hold(signum: int, frame: Any) -> None:
        if held:  # a second signal: at once
            if signum == signal.SIGINT:
                raise KeyboardInterrupt
            sys.exit(signum)
        held.append(signum)

    before = {sig: signal.signal(sig, hold) for sig in (signal.SIGINT, signal.SIGTERM)}
    ray_utils.set_sigterm_handler = wanted.append
    try:
        yield held
    finally:
        ray_utils.set_sigterm_handler = set_handler
        if wanted:
            before[signal.SIGTERM] = wanted[-1]
        for sig, handler in before.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


#: Ray's switch for the native fatal-signal handler its core worker installs (``ray_constants`` reads it at import)
NATIVE_HANDLER_ENV = "RAY_DISABLE_FAILURE_SIGNAL_HANDLER"


@contextlib.contextmanager
def _no_native_crash_handler() -> Iterator[None]:
    """Keep Ray's native fatal-signal handler out of this (the driver's) process while ``ray.init`` runs.

    The driver's core worker, built inside ``ray.init`` (a native call of seconds on a loaded machine),
    installed absl's failure handler for SIGTERM (and SIGSEGV, SIGABRT...) over Python's: a SIGTERM in that
    window printed a native stack trace, and the handler's 3 s alarm then aborted the process (exit code
    134) while Ray was still shutting down. Without it, the signal reaches Python (:func:`_signals_held`).
    Only this process's setting changes (explorer processes keep theirs), and only while ``ray.init``
    runs; a ``RAY_DISABLE_FAILURE_SIGNAL_HANDLER`` set in the environment is used as it is.
    """
    try:
        from ray._private import ray_constants
    except ImportError:  # another Ray layout: nothing to change
        ray_constants = None
    if NATIVE_HANDLER_ENV in os.environ or not hasattr(ray_constants, NATIVE_HANDLER_ENV):
        yield
        return
    before = getattr(ray_constants, NATIVE_HANDLER_ENV)
    setattr(ray_constants, NATIVE_HANDLER_ENV, True)
    try:
        yield
    finally:
        setattr(ray_constants, NATIVE_HANDLER_ENV, before)


#: SIGTERMs taken by the handler :func:`_python_sigterm_handler` installs since Ray last started (see
#: :func:`sigterm_code`)
_sigterms: list[int] = []
#: how many SIGTERMs that handler took in this process, ever (:func:`sigterms_taken`)
_sigterm_total = 0


def sigterms_taken() -> int:
    """How many SIGTERMs the handler that :func:`connect` puts back after ``ray.init`` took in this process so far: a
    caller that notes it before a run tells by it after the run whether the run was stopped by one (tune's
    :func:`~canter.tools.tune_workers.trial_signals`; :data:`_sigterms` is cleared only when Ray next starts, so it
    still held a SIGTERM of an earlier run in the process)."""
    return _sigterm_total


def _python_sigterm_handler() -> None:
    """Put the Python-level SIGTERM handler back in force after ``ray.init``, noting each signal it takes.

    ``ray.init`` sets a Python handler (``sys.exit(15)``), but the driver's core worker then installs a
    native fatal-signal handler over it: a SIGTERM before the run's own handlers were installed (while
    the explorers start, seconds) printed a native stack trace and aborted the process (exit code 134),
    with nothing closed. Installed again, the Python handler raises ``SystemExit``, and the pool stops its
    explorers and disconnects on the way out (exit code 15; :func:`sigterm_code` keeps it 15 where a
    blocking Ray call would make it 1).
    """
    _sigterms.clear()
    if threading.current_thread() is not threading.main_thread():
        return
    handler = signal.getsignal(signal.SIGTERM)
    if callable(handler):
        def on_sigterm(signum: int, frame: Any) -> None:
            global _sigterm_total
            _sigterms.append(signum)
            _sigterm_total += 1
            handler(signum, frame)

        signal.signal(signal.SIGTERM, on_sigterm)
    elif handler is not None:  # (None: not set from Python; nothing to put back)
        signal.signal(signal.SIGTERM, handler)


@contextlib.contextmanager
def sigterm_code() -> Iterator[None]:
    """Around a blocking Ray call (``ray.get``, ``ray.wait``): the ``SystemExit`` of a SIGTERM keeps its code.

    Ray turns the ``SystemExit(15)`` that the SIGTERM handler raises while it waits into ``SystemExit(1)``:
    a SIGTERM while the explorers were built ended the process with exit code 1 and no message, as a failure.
    """
    try:
        yield
    except SystemExit as exc:
        if _sigterms and exc.code == 1:
            raise SystemExit(_sigterms[-1]) from None
        raise


def _restore_auth_mode() -> None:
    """Put RAY_AUTH_MODE back as it was before :func:`connect` (Ray or canter may have set it)."""
    if _auth_before:
        before = _auth_before.pop()
        if os.environ.get(AUTH_MODE_ENV) != before:
            _set_auth_mode(before)


def disconnect(ray: Any, owns_connection: bool) -> None:
    """Shut down the local instance, or disconnect from a joined cluster (which keeps running)."""
    if owns_connection:
        try:
            if ray.is_initialized():
                with _signals_held() as held:  # a Ctrl-C in the middle left Ray's agents running for minutes
                    ray.shutdown()
                if held:  # now that Ray is down, the handler in force takes it (a second Ctrl-C: KeyboardInterrupt)
                    signal.raise_signal(held[0])
        finally:
            _restore_auth_mode()  # a later run in this process may join a cluster without token auth
