"""Float32 matrix products on the faster of torch's two CPU GEMM libraries.

torch multiplies float32 matrices with Intel MKL, which on AMD processors runs its AVX2 code path
even where the CPU has AVX-512. torch also ships oneDNN, whose kernels use the CPU's widest
instructions whatever the vendor, reachable for dense tensors through the
``torch.ops.mkldnn._linear_pointwise`` operator (``x @ w.T + b``, the one its compiler uses). Measured on the
2-core AMD EPYC (Zen 5) this project is developed on, one thread, float32, milliseconds per product:

    shape (m, k, n)         MKL     oneDNN
    64 x 256 x 256          0.098   0.056
    8192 x 256 x 256       12.1     5.9
    256 x 3136 x 512        9.1     4.2
    64 x 64 x 64            0.009   0.019   (small products: oneDNN's fixed cost dominates)

On a Zen 4 host (cpu family 25, model 17: AVX-512 on 256-bit units), best of 5, forward / the
weight-gradient product ``grad.T @ x``:

    shape (m, k, n)         MKL            oneDNN
    64 x 256 x 256          0.091 / 0.091  0.096 / 0.109
    128 x 256 x 256         0.169 / 0.172  0.169 / 0.188
    1024 x 256 x 256        1.40 / 1.67    1.33 / 1.52
    256 x 3136 x 512        8.74 / 10.0    7.86 / 8.64

and DQN's CartPole loop (all its products 64 x 256 x 256) ran at 1,746-1,926 env-steps/s routed
against 2,026-2,097 on MKL. Products with a large right operand are memory-bound and oneDNN still
wins there: 8 x 3136 x 512 (acting for 8 Atari envs) 0.453 / 0.408 at one thread, 0.394 / 0.250 at two.
So products of at least :func:`min_macs` multiply-accumulates go to oneDNN on AMD CPUs: 2^21 from
Zen 5 on (cpu family 26 and later), 2^24 on earlier ones, where products of at least 2^21 whose
right operand has :data:`WIDE_OPERAND` entries go too; everything else stays with torch. Zen 3
(family 25 too, AVX2 only) was checked with the same rule: products alone were mixed at 2 threads
(256 x 3136 x 512: MKL 9.4 ms, oneDNN 12.4; at batch 32: 1.25 and 1.17), and whole Pong training with
the route on and off in alternate iterations gave PPO 1,053 frames/s on and 1,068 off (noise), DQN
392 on and 374 off. The choice depends only on the CPU and the shapes, never on timing, so a seeded
run computes the same numbers every time on the same machine. Both libraries compute in float32 (no reduced-precision
shortcut); results differ from MKL's only by summation order.

:class:`Linear` is ``nn.Linear`` with this routing (same parameters, same state-dict keys), with
an autograd function whose backward uses the same kernels; where a graph of the backward is
needed (``create_graph=True``, e.g. TRPO's Hessian-vector products) it falls back to torch ops.

:func:`affine_np` and :func:`matmul_np` are the same products for NumPy arrays (the hand-derived
DQN update and acting work on arrays): products under :data:`NUMPY_MAX_MACS` are multiplied by
NumPy itself, whose call costs ~1 µs against torch's ~4 (at CartPole's sizes the call, not the
arithmetic, is the cost), larger ones by the torch kernels above, on tensors sharing the arrays'
memory, except :func:`matmul_np`'s below oneDNN's routing size once canter has limited OpenBLAS's
threads (:func:`_matmul_on_numpy`); all of them by NumPy where a run gave OpenBLAS two or more threads
(:func:`set_blas_threads`).
"""
from __future__ import annotations

import functools
import os
import platform
import sys
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from canter.utils import available_cpus, cpu_info

#: on Zen 5 and later, products with fewer multiply-accumulates than this stay with torch (oneDNN's
#: per-call cost wins below)
MIN_MACS = 1 << 21
#: the same on earlier AMD CPUs (Zen 4 runs AVX-512 on 256-bit units: oneDNN wins only on big products)
MIN_MACS_BEFORE_ZEN5 = 1 << 24
#: ...or, there, on products of at least MIN_MACS whose right operand has this many entries (the
#: memory-bound ones, such as acting through the Nature CNN's 3136x512 layer)
WIDE_OPERAND = 1 << 20
#: NumPy multiplies products with fewer multiply-accumulates than this (OpenBLAS runs products this
#: small on the calling thread, so torch's thread setting is respected); torch multiplies larger ones,
#: unless :func:`set_blas_threads` gave OpenBLAS the run's threads
NUMPY_MAX_MACS = 1 << 18
#: OpenBLAS threads granted by :func:`set_blas_threads` (1: the routing above)
_blas_threads = 1
#: OpenBLAS's own pool size, as :func:`set_blas_threads` first found it (None: not called yet)
_blas_own_pool: int | None = None
#: True while OpenBLAS runs at the threads :func:`set_blas_threads` granted (False: its own pool size)
_blas_limited = False


def set_blas_threads(n: int) -> int:
    """Let NumPy's BLAS (OpenBLAS, through ``threadpoolctl``) use ``n`` threads, at most
    :func:`available_cpus`; returns the number set.

    With 2 or more, :func:`affine_np` and :func:`matmul_np` multiply every product with NumPy:
    OpenBLAS's threads stay hot between calls, where torch's second thread costs more to wake
    than it saves. In DQN's CartPole update (64 x 256 x 256 products), gradient steps took
    454-463 µs with OpenBLAS at 2 threads and torch at 1, against 547-554 µs all at 1 thread
    (alternating phases of one run, Zen 4, 2 cores); torch at 2 threads was slower than at 1.
    The caller keeps torch at one thread meanwhile (:func:`canter.algorithms.base.use_threads`):
    both pools at 2 threads on 2 cores took 9 ms per gradient step.
    """
    from threadpoolctl import threadpool_limits

    global _blas_threads, _blas_own_pool, _blas_limited
    n = max(1, min(int(n), available_cpus()))
    if _blas_own_pool is None:  # OpenBLAS's pool size before canter first limits it
        _blas_own_pool = blas_pool_threads()
    threadpool_limits(limits=n, user_api="blas")
    _blas_threads = n
    _blas_limited = True
    return n


def blas_state() -> tuple[int, bool]:
    """What :func:`restore_blas_threads` needs to put NumPy's BLAS back as it is now."""
    return _blas_threads, _blas_own_pool is None


def restore_blas_threads(state: tuple[int, bool]) -> None:
    """Put NumPy's BLAS threads back as :func:`blas_state` found them: the threads
    :func:`set_blas_threads` had granted, or OpenBLAS's own pool size when canter had not limited it yet."""
    global _blas_threads, _blas_limited
    threads, own = state
    if (_blas_threads, _blas_own_pool is None) == state or sys.is_finalizing():
        # a process shutting down (a trainer's loop left suspended, closed as the interpreter clears its modules)
        # has no caller to give threads back to, and importing threadpoolctl then was an ImportError traceback
        return
    if own and _blas_own_pool:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=_blas_own_pool, user_api="blas")
        _blas_threads = threads
        _blas_limited = False
    else:
        set_blas_threads(threads)


def blas_threads() -> int:
    """The threads :func:`set_blas_threads` last granted OpenBLAS (1 until it is called: OpenBLAS
    then keeps its own pool size, but gets only products it runs on the calling thread)."""
    return _blas_threads


def blas_limited() -> bool:
    """True while OpenBLAS runs at the threads :func:`set_blas_threads` granted (not its own pool size)."""
    return _blas_limited


def blas_pool_threads() -> int:
    """The thread count OpenBLAS (NumPy's BLAS) reports now, through ``threadpoolctl`` (0: none found)."""
    from threadpoolctl import threadpool_info

    return max((i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"), default=0)


def _on_numpy(macs: int) -> bool:
    """Whether a product ``x @ w.T`` (:func:`affine_np`) of ``macs`` multiply-accumulates runs on NumPy."""
    return macs < NUMPY_MAX_MACS or _blas_threads > 1


def _matmul_on_numpy(macs: int) -> bool:
    """Whether a product ``a @ b`` (:func:`matmul_np`, ``b`` not a transposed weight) runs on NumPy: as
    :func:`_on_numpy`, and also below oneDNN's routing size while OpenBLAS runs at the threads canter
    granted it (:func:`set_blas_threads`; then no product wakes threads beyond them). In that layout
    OpenBLAS at one thread is as fast as MKL in isolation (Zen 4: 64x256x256 85 vs 86 µs, 74x64x256
    with a transposed left operand 27 vs 28) and its call cheaper; in DQN's CartPole update the two
    backward products of the 256-unit layer took 38 µs instead of 69 (with their gathers and sums) and
    31 instead of 40. For ``x @ w.T`` OpenBLAS is slower (110 vs 88 µs at 64x256x256): :func:`affine_np`
    keeps :func:`_on_numpy`."""
    return _on_numpy(macs) or (_blas_limited and macs < min_macs())


def _cpu_vendor() -> str:
    return cpu_info("vendor_id") or platform.processor()


@functools.cache
def onednn_available() -> bool:
    """True where float32 products are routed to oneDNN: an x86-64 AMD CPU, torch built with oneDNN
    (``torch.backends.mkldnn``), and ``CANTER_ONEDNN`` not set to ``0``."""
    if os.environ.get("CANTER_ONEDNN", "1") == "0":
        return False
    if platform.machine().lower() not in ("x86_64", "amd64") or _cpu_vendor() != "AuthenticAMD":
        return False
    if not torch.backends.mkldnn.is_available() or not hasattr(torch.ops.mkldnn, "_linear_pointwise"):
        return False
    try:  # the operator is internal to torch: check it exists and computes x @ w.T + b
        x, w, b = torch.ones(2, 3), torch.ones(4, 3), torch.ones(4)
        return bool(torch.equal(torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], ""), torch.full((2, 4), 4.0)))
    except (RuntimeError, TypeError):
        return False


def routing_threshold(cpu_family: str | None) -> int:
    """The smallest product (multiply-accumulates) routed to oneDNN on an AMD CPU of this
    ``/proc/cpuinfo`` family: :data:`MIN_MACS` from Zen 5 (family 26) on, else :data:`MIN_MACS_BEFORE_ZEN5`."""
    try:
        return MIN_MACS if int(cpu_family or 0) >= 26 else MIN_MACS_BEFORE_ZEN5
    except ValueError:
        return MIN_MACS_BEFORE_ZEN5


@functools.cache
def min_macs() -> int:
    """:func:`routing_threshold` for this machine's CPU."""
    return routing_threshold(cpu_info("cpu family"))


def _routed(x: torch.Tensor, m: int, k: int, n: int) -> bool:
    macs = m * k * n
    big = macs >= min_macs() or (macs >= MIN_MACS and k * n >= WIDE_OPERAND)
    return big and x.dtype == torch.float32 and x.device.type == "cpu" and onednn_available()


def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """``x @ w.T + b`` for 2-D ``x`` ``[m, k]`` and ``w`` ``[n, k]`` (views such as transposes are fine);
    no autograd graph is recorded on the oneDNN route."""
    if _routed(x, x.shape[0], x.shape[1], w.shape[0]):
        return torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")
    # addmm / mm directly: F.linear's dispatch copies a transposed ``w`` first (6 vs 4 µs at 64x2x256)
    return torch.mm(x, w.t()) if b is None else torch.addmm(b, x, w.t())


def mm_into(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``out = a @ b`` (``a`` ``[m, k]``, ``b`` ``[k, n]``), written into ``out``."""
    if _routed(a, a.shape[0], a.shape[1], b.shape[1]):
        return out.copy_(torch.ops.mkldnn._linear_pointwise(a, b.t(), None, "none", [], ""))
    if b.shape[1] < a.shape[0]:  # MKL is 2-4x slower when the output's last dimension is the small one
        torch.mm(b.t(), a.t(), out=out.t())  # (a @ b).T = b.T @ a.T, written through the transposed view
        return out
    return torch.mm(a, b, out=out)


def affine_np(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, out: np.ndarray | None = None) -> np.ndarray:
    """``x @ w.T + b`` for NumPy arrays ``x`` ``[m, k]``, ``w`` ``[n, k]``: an array ``[m, n]``, written
    into ``out`` (C-contiguous) when given, else new."""
    m, k = x.shape
    n = w.shape[0]
    if not _on_numpy(m * k * n):
        xt, wt, bias = torch.from_numpy(x), torch.from_numpy(w), None if b is None else torch.from_numpy(b)
        if out is None or _routed(xt, m, k, n):
            y = linear(xt, wt, bias).numpy()
            if out is None:
                return y
            np.copyto(out, y)
        elif bias is None:
            torch.mm(xt, wt.t(), out=torch.from_numpy(out))
        else:
            torch.addmm(bias, xt, wt.t(), out=torch.from_numpy(out))
        return out
    out = np.matmul(x, w.T, out=out)
    if b is not None:
        np.add(out, b, out=out)
    return out


class ChainNp:
    """Affine layers ``(w, b)`` (NumPy, ``w`` ``[out, in]``) with an in-place ``activate`` between them, for
    batches whose every product runs on NumPy (:meth:`on_numpy`; acting on a few envs): the calls
    :func:`affine_np` makes for such products, without its per-call checks (one CartPole observation
    through 256-256 units: each check cost about what a product does)."""

    def __init__(self, layers: list[tuple[np.ndarray, np.ndarray]], activate: Any) -> None:
        self.layers = [(w.T, b) for w, b in layers]
        self.activate = activate
        self.row_macs = max(w.size for w, _ in layers)

    def on_numpy(self, rows: int) -> bool:
        """Whether :func:`affine_np` would multiply every layer of a batch of ``rows`` on NumPy."""
        return _on_numpy(rows * self.row_macs)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """The layers' output for ``x`` ``[B, in]``."""
        last = len(self.layers) - 1
        for i, (w_t, b) in enumerate(self.layers):
            x = np.matmul(x, w_t)
            np.add(x, b, out=x)
            if i < last:
                self.activate(x)
        return x


def matmul_np(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``a @ b`` for NumPy arrays ``a`` ``[m, k]``, ``b`` ``[k, n]`` (views such as transposes are
    fine), written into ``out`` when given."""
    m, k = a.shape
    n = b.shape[1]
    if _matmul_on_numpy(m * k * n):
        return np.matmul(a, b, out=out)
    if out is None:
        return linear(torch.from_numpy(a), torch.from_numpy(b).t()).numpy()
    mm_into(torch.from_numpy(out), torch.from_numpy(a), torch.from_numpy(b))
    return out


class _LinearFunction(torch.autograd.Function):
    """``x @ w.T + b`` with the backward products on the same kernels (:func:`linear`)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:  # noqa: D102
        ctx.save_for_backward(x, w)
        ctx.has_bias = b is not None
        return torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:  # noqa: D102
        x, w = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph=True: differentiable torch ops
            gx = grad @ w if ctx.needs_input_grad[0] else None
            gw = grad.t() @ x if ctx.needs_input_grad[1] else None
        else:
            gx = linear(grad, w.t()) if ctx.needs_input_grad[0] else None
            gw = linear(grad.t(), x.t()) if ctx.needs_input_grad[1] else None
        gb = grad.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return gx, gw, gb


class Linear(nn.Linear):
    """``nn.Linear`` whose large float32 products run on oneDNN where that is faster (see the module
    docstring); same parameters and state-dict keys, so checkpoints are interchangeable."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # noqa: D102
        return differentiable_linear(x, self.weight, self.bias)


def differentiable_linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """``F.linear(x, w, b)`` on :func:`linear`'s kernels, recording the autograd graph whenever an
    input needs gradients (``w`` may be computed, e.g. a noisy layer's ``mu + sigma * eps``)."""
    if x.dim() != 2 or not _routed(x, x.shape[0], w.shape[1], w.shape[0]):
        return F.linear(x, w, b)
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, w, b)):
        return _LinearFunction.apply(x, w, b)
    return torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")
