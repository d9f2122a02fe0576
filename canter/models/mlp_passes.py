"""An MLP's hand-derived forward and backward passes for one batch size, with every per-call
decision taken once.

:meth:`MLP.forward_cached <canter.models.mlp.MLP.forward_cached>` and
:meth:`~canter.models.mlp.MLP.backward_cached` check, at every call, that the parameters' and
gradients' NumPy views are current (a key of data pointers, the ``.grad`` tensors one by one), pick
each product's library (:func:`canter.models.linear.affine_np` / :func:`~canter.models.linear.matmul_np`)
and wrap the arrays in tensors for the products torch multiplies. DQN's training phase takes 128
gradient steps on one network and one batch size in a row, so :class:`MLPPasses` does all of that
once: the products are bound to their arrays and tensors, the activations' derivatives and the
backward's gradient arrays are preallocated, and :func:`mlp_passes` checks once per phase that
nothing moved. Every product, activation and sum is the one the MLP's own methods compute, on the
same kernels in the same order, so the results are the same bits (``tests/test_dqn_fast_path.py``).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from canter.models import mlp as mlp_module
from canter.models.activations import tanh_
from canter.models.linear import _matmul_on_numpy, _on_numpy, _routed, affine_np, blas_limited, blas_threads, matmul_np


def _affine(w: np.ndarray, b: np.ndarray, out: np.ndarray, rows_in: np.ndarray | None) -> Callable[[np.ndarray], Any]:
    """``x -> out = x @ w.T + b`` on the library :func:`affine_np` picks for this shape; ``rows_in``:
    the layer's input array when it is always the same one (a previous layer's output), else None."""
    m, n, k = out.shape[0], w.shape[0], w.shape[1]
    if _on_numpy(m * k * n):
        w_t = w.T

        def on_numpy(x: np.ndarray) -> None:
            np.matmul(x, w_t, out=out)
            np.add(out, b, out=out)
        return on_numpy
    wt, bt, ot = torch.from_numpy(w).t(), torch.from_numpy(b), torch.from_numpy(out)
    if _routed(ot, m, k, n):  # oneDNN: affine_np's copy of its result
        return lambda x: affine_np(x, w, b, out)
    if rows_in is not None:
        xt = torch.from_numpy(rows_in)
        return lambda x: torch.addmm(bt, xt, wt, out=ot)
    return lambda x: torch.addmm(bt, torch.from_numpy(x), wt, out=ot)


def _product_into(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> Callable[[], Any]:
    """``out = a @ b`` for these arrays (views such as transposes), on the library :func:`matmul_np` picks."""
    if _matmul_on_numpy(a.shape[0] * a.shape[1] * b.shape[1]):
        return lambda: np.matmul(a, b, out=out)
    return lambda: matmul_np(a, b, out=out)


def _routing() -> tuple[int, bool]:
    """What the products' routes depend on besides their shapes: NumPy's BLAS threads and whether canter set them."""
    return blas_threads(), blas_limited()


class MLPPasses:
    """:class:`~canter.models.mlp.MLP`'s ``forward_cached(x, reuse=True)`` and ``backward_cached`` for
    batches of ``rows`` (same results), with the arrays, tensors and routes bound once; valid while
    :func:`mlp_passes` returns it (the parameters' and gradients' storage unchanged)."""

    def __init__(self, mlp: Any, rows: int) -> None:
        self.layers = mlp._arrays()
        self.grads = mlp._grad_arrays()
        self.outs = outs = mlp._workspace(rows)
        self.rows = rows
        self.relu = mlp.activation == "relu"
        last = len(self.layers) - 1
        self.last = last
        self.ones = mlp._ones(rows)
        self.bias_grads = [b_grad[None] for _, b_grad in self.grads]
        #: per layer: the affine product into ``outs[i]``, and the activation's derivative buffer (tanh)
        self.affine = [_affine(w, b, outs[i], None if i == 0 else outs[i - 1]) for i, (w, b) in enumerate(self.layers)]
        self.derivs = [None if self.relu or i == last else np.empty_like(outs[i]) for i in range(last + 1)]
        # backward: d(loss)/d(input of layer i), i >= 1, kept; the relu masks; the dense weight-gradient products
        self.d_in = [None] + [np.empty((rows, w.shape[1]), w.dtype) for w, _ in self.layers[1:]]
        self.on = [None] + [np.empty((rows, w.shape[1]), bool) for w, _ in self.layers[1:]]
        self.sparse = [i > 1 and self.layers[i - 1][0].size >= mlp_module.SPARSE_MIN_WEIGHTS for i in range(last + 1)]
        self.cache: list[np.ndarray] = [outs[0]] * (2 * last + 1)
        self._d_out: np.ndarray | None = None  # the d_out array the weight-gradient products are bound to
        self._weight_grads: list[Any] = []
        self.routing = _routing()

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """Output ``[rows, out]`` and cache, as ``MLP.forward_cached(x, reuse=True)`` (the arrays are
        this object's, overwritten by the next call)."""
        cache, outs, relu, last = self.cache, self.outs, self.relu, self.last
        cache[0] = x
        for i, affine in enumerate(self.affine):
            affine(x if i == 0 else outs[i - 1])
            if i < last:
                h = outs[i]
                if relu:
                    mlp_module._relu_(h)
                    cache[2 * i + 1] = h
                else:
                    tanh_(h)
                    deriv = self.derivs[i]
                    np.multiply(h, h, out=deriv)
                    np.subtract(1.0, deriv, out=deriv)
                    cache[2 * i + 1] = deriv
                cache[2 * i + 2] = h
        return outs[last], cache

    def backward(self, d_out: np.ndarray) -> None:
        """Every layer's ``.grad`` from ``d_out`` = d(loss)/d(output) of the last :meth:`forward`, as
        ``MLP.backward_cached``."""
        if self._d_out is not d_out:  # the dense weight-gradient products of layers 1.., bound to d_out
            self._d_out = d_out
            self._weight_grads = [None] + [
                _product_into((d_out if i == self.last else self.d_in[i + 1]).T, self.outs[i - 1], self.grads[i][0])
                for i in range(1, self.last + 1)]
        cache, layers, grads, relu, weight_grads = self.cache, self.layers, self.grads, self.relu, self._weight_grads
        ones, bias_grads, d_in, on_masks, sparse = self.ones, self.bias_grads, self.d_in, self.on, self.sparse
        d = d_out
        units = None  # relu: the units of layer i active for some sample (None: every column of d)
        for i in range(self.last, -1, -1):
            np.matmul(ones, d, out=bias_grads[i])
            if units is None:
                if i:  # d is d_out or d_in[i + 1], the bound product's operand
                    weight_grads[i]()
                else:
                    matmul_np(d.T, cache[0], out=grads[0][0])
            else:  # the other columns of d are zero, and so are their rows of the weight gradient
                d = np.take(d, units, axis=1)
                w_grad = grads[i][0]
                w_grad.fill(0.0)
                w_grad[units] = matmul_np(d.T, cache[2 * i])
            if i == 0:
                break
            w = layers[i][0]
            d = matmul_np(d, w if units is None else w[units], out=d_in[i])
            if relu:
                on = np.greater(cache[2 * i - 1], 0.0, out=on_masks[i])
                np.multiply(d, on, out=d)
                units = mlp_module._active_units(on) if sparse[i] else None
            else:
                np.multiply(d, cache[2 * i - 1], out=d)


def mlp_passes(mlp: Any, rows: int) -> MLPPasses:
    """The :class:`MLPPasses` of ``mlp`` for batches of ``rows``, rebuilt when a parameter's or a
    gradient's storage moved (a flat optimizer taking them over, ``.to()``, a replaced ``.grad``) or
    NumPy's BLAS threads changed (the products' routes depend on them)."""
    passes = mlp.__dict__.get("_np_passes")
    if (passes is None or passes.rows != rows or passes.routing != _routing() or mlp._arrays() is not passes.layers
            or mlp._grad_arrays() is not passes.grads or mlp._workspace(rows) is not passes.outs):
        passes = mlp._np_passes = MLPPasses(mlp, rows)
    return passes


def q_network_passes(q: Any, obs: torch.Tensor, rows: int) -> tuple[MLPPasses, np.ndarray] | None:
    """For canter's :class:`~canter.models.q_network.QNetwork` on the hand-derived path: its MLP's passes for
    batches of ``rows`` and the MLP's input for ``obs`` (every row), as ``QNetwork.forward_cached``
    computes it; None for any other model."""
    from canter.models.q_network import QNetwork  # it imports this module's MLP

    if type(q) is not QNetwork or not q.manual_backward:
        return None
    if q.mask_width:
        obs = obs[:, :-q.mask_width]
    x = q.encoder.numpy(obs.numpy()) if q.numpy_acting else q.encoder.forward(obs).numpy()
    return mlp_passes(q.q, rows), x
