"""Several MLPs of the same hidden widths evaluated as one: a batched matmul per layer.

An actor and a critic with the same hidden layers are two such MLPs. Stacking their weights
(``[groups, in, out]``) halves the number of kernels per forward and backward pass, and the fixed
structure allows a hand-derived backward pass (:meth:`StackedMLP.backward_cached`) that skips
autograd's bookkeeping, which costs more than the arithmetic for 64-unit layers on a CPU. Output
layers are padded to the widest group; padded columns start at zero and receive zero gradient.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from canter.errors import CanterError
from canter.models.activations import tanh_
from canter.models.linear import NUMPY_MAX_MACS

#: activations whose derivative :meth:`StackedMLP.backward_cached` knows
MANUAL_ACTIVATIONS = ("tanh", "relu")
#: relu's backward kernel: ``grad`` where ``output > 0``, else 0 (one op; a bool mask costs two, ~4x longer)
_relu_backward = torch.ops.aten.threshold_backward
_TORCH_ACT = {"tanh": torch.tanh, "relu": torch.relu, "elu": nn.functional.elu, "gelu": nn.functional.gelu,
              "silu": nn.functional.silu}


def _tanh_inplace(x: torch.Tensor) -> torch.Tensor:
    """In-place tanh on the faster kernel for this CPU (:func:`canter.models.activations.tanh_`):
    torch 2.13's own CPU tanh was the slowest of those measured. Off the CPU: torch's own, in place."""
    if x.device.type != "cpu":
        return x.tanh_()
    tanh_(x.numpy())
    return x


class StackedMLP(nn.Module):
    """``groups`` MLPs ``n_in -> hidden... -> outs[g]`` sharing hidden widths, stored stacked."""

    def __init__(
        self, groups: int, n_in: int, hidden: list[int], outs: list[int], activation: str = "tanh",
        ortho_init: bool = True, out_gains: list[float] | None = None,
    ) -> None:
        super().__init__()
        if activation not in _TORCH_ACT:
            raise CanterError(f"unknown activation '{activation}'; choices: {', '.join(_TORCH_ACT)}")
        if len(outs) != groups:
            raise ValueError("one output size per group")
        self.groups, self.outs, self.activation = groups, list(outs), activation
        self.act_fn = _TORCH_ACT[activation]
        gains = out_gains or [1.0] * groups
        sizes = [n_in, *hidden, max(outs)]
        # Layout per layer: MKL multiplies skinny matrices 3-5x faster when the small dimension is not
        # the output's last one, so a layer that narrows (in > out, e.g. the heads) is stored as
        # ``[groups, out, in]`` (nn.Linear's layout) and a layer that widens as ``[groups, in, out]``.
        self.transposed = tuple(sizes[i] > sizes[i + 1] for i in range(len(sizes) - 1))
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for i in range(len(sizes) - 1):
            last = i == len(sizes) - 2
            shape = (groups, sizes[i + 1], sizes[i]) if self.transposed[i] else (groups, sizes[i], sizes[i + 1])
            w = torch.zeros(shape)
            b = torch.zeros(groups, 1, sizes[i + 1])
            for g in range(groups):
                width = outs[g] if last else sizes[i + 1]
                lin = nn.Linear(sizes[i], width)  # torch's default init, or orthogonal below
                if ortho_init:
                    nn.init.orthogonal_(lin.weight, gains[g] if last else math.sqrt(2))
                    nn.init.zeros_(lin.bias)
                if self.transposed[i]:
                    w[g, :width, :] = lin.weight.detach()
                else:
                    w[g, :, :width] = lin.weight.detach().T
                b[g, 0, :width] = lin.bias.detach()
            self.weights.append(nn.Parameter(w))
            self.biases.append(nn.Parameter(b))
        # plain tuples: iterating a ParameterList costs more than a small layer's matmul
        self._layers = self._make_layers()
        self.register_load_state_dict_post_hook(StackedMLP._relink)

    def __getstate__(self) -> dict:
        """Without the reused activation buffers: a copy's NumPy views would no longer share their
        tensors' memory (``copy.deepcopy`` copies each array apart), so the copy makes its own."""
        state = self.__dict__.copy()
        state.pop("_bufs", None)
        return state

    @staticmethod
    def _relink(module: nn.Module, _incompatible: object) -> None:
        """``load_state_dict(..., assign=True)`` replaces Parameter objects: refresh the tuples."""
        module._layers = module._make_layers()

    def _make_layers(self) -> tuple[tuple[nn.Parameter, nn.Parameter, bool], ...]:
        """(weight, bias, stored transposed) per layer (the Parameter objects themselves, so that an
        optimizer moving their storage, as :class:`canter.optim.FlatAdam` does, is seen here)."""
        return tuple(zip(self.weights, self.biases, self.transposed))

    @property
    def manual_backward(self) -> bool:
        """True when :meth:`backward_cached` supports the activation."""
        return self.activation in MANUAL_ACTIVATIONS

    def _inputs(self, x: torch.Tensor) -> torch.Tensor:
        """``[groups, B, n_in]``: the same input ``[B, n_in]`` for every group, or each group's own."""
        return x if x.dim() == 3 else x.unsqueeze(0).expand(self.groups, *x.shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """All groups on the same input ``[B, n_in]`` (or each on its own, ``[groups, B, n_in]``):
        returns ``[groups, B, max(outs)]`` (autograd)."""
        h = self._inputs(x)
        last = len(self._layers) - 1
        fast_tanh = self.activation == "tanh" and not torch.is_grad_enabled()
        for i, (w, b, t) in enumerate(self._layers):
            h = torch.baddbmm(b, h, w.transpose(1, 2) if t else w)
            if i < last:
                h = _tanh_inplace(h) if fast_tanh else self.act_fn(h)
        return h

    def forward_group(self, x: torch.Tensor, g: int) -> torch.Tensor:
        """One group only: ``[B, outs[g]]`` (autograd)."""
        h = x[g] if x.dim() == 3 else x
        last = len(self._layers) - 1
        fast_tanh = self.activation == "tanh" and not torch.is_grad_enabled()
        for i, (w, b, t) in enumerate(self._layers):
            h = torch.addmm(b[g], h, w[g].t() if t else w[g])
            if i < last:
                h = _tanh_inplace(h) if fast_tanh else self.act_fn(h)
        return h[:, : self.outs[g]]

    def infer_numpy(self, x: np.ndarray) -> np.ndarray | None:
        """The forward pass on a NumPy batch ``[B, n_in]`` (or ``[groups, B, n_in]``) with NumPy's kernels: ``[groups, B,
        max(outs)]``, for acting on a few observations, where torch's per-op cost (~4 µs against
        NumPy's ~1) dominates. None where a layer's product per group reaches
        :data:`~canter.models.linear.NUMPY_MAX_MACS` (OpenBLAS could then start threads torch's
        setting does not govern) or the activation is not tanh / relu: use :meth:`forward` there."""
        layers = self._numpy_layers()
        if layers is None or x.shape[-2] * self._max_layer_macs >= NUMPY_MAX_MACS:
            return None
        h = x  # [B, in] (or [groups, B, in]) @ [groups, in, out] broadcasts to [groups, B, out]
        last = len(layers) - 1
        for i, (w, b) in enumerate(layers):
            h = np.matmul(h, w)
            h += b
            if i < last:
                if self.activation == "tanh":
                    tanh_(h)
                else:
                    np.maximum(h, 0.0, out=h)
        return h

    def _numpy_layers(self) -> list[tuple[np.ndarray, np.ndarray]] | None:
        """Per layer the weight as ``[groups, in, out]`` (a view of transposed storage) and the bias,
        as NumPy arrays sharing the parameters' memory; rebuilt when a parameter's storage moves
        (a flat optimizer taking it over). None for activations :meth:`infer_numpy` lacks."""
        if self.activation not in MANUAL_ACTIVATIONS:
            return None
        key = [p.data_ptr() for w, b, _ in self._layers for p in (w, b)]
        if key != self.__dict__.get("_np_key"):
            self._np_layers = [
                (w.detach().numpy().transpose(0, 2, 1) if t else w.detach().numpy(), b.detach().numpy())
                for w, b, t in self._layers
            ]
            self._max_layer_macs = max(w.shape[1] * w.shape[2] for w, _ in self._np_layers)
            self._np_key = key
        return self._np_layers

    def forward_cached(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Forward pass without autograd that keeps what :meth:`backward_cached` needs: each layer's
        input and each activation's derivative.

        The output and the cache live in buffers this model reuses for the next call with the same
        batch size (fixed addresses stay in the CPU's caches): use them before calling again.
        """
        if torch.is_grad_enabled():  # one check instead of a decorator: this runs thousands of times
            with torch.no_grad():
                return self.forward_cached(x)
        h = self._inputs(x)
        bufs = self._buffers_for(h.shape[1])
        cache = [h]
        last = len(self._layers) - 1
        tanh = self.activation == "tanh"
        for i, (w, b, t) in enumerate(self._layers):
            out = bufs.outputs[i]
            torch.baddbmm(b, h, w.transpose(1, 2) if t else w, out=out)
            h = out
            if i < last:
                if tanh:
                    a = tanh_(bufs.np_outputs[i])  # in place, on the faster kernel for this CPU
                    deriv = bufs.np_derivs[i]  # 1 - tanh^2, in NumPy: two cheap ops
                    np.multiply(a, a, out=deriv)
                    np.subtract(1.0, deriv, out=deriv)
                    cache.append(bufs.derivs[i])
                else:
                    h.clamp_(min=0.0)
                    cache.append(h)  # relu's derivative is read off its output (threshold_backward)
                cache.append(h)
        return h, cache

    def _buffers_for(self, rows: int) -> _Buffers:
        """The reused activation buffers of :meth:`forward_cached` / :meth:`backward_cached` for batches of ``rows``."""
        bufs = self.__dict__.get("_bufs")
        if bufs is None or bufs.rows != rows or bufs.storage.dtype != self._layers[0][0].dtype:  # re-viewed, where large enough
            bufs = self._bufs = _Buffers(self, rows, None if bufs is None else bufs.storage)
        return bufs

    def backward_cached(self, cache: list[torch.Tensor], d_out: torch.Tensor) -> None:
        """Set every weight's and bias's ``.grad`` to d(loss)/d(param), given ``d_out`` = d(loss)/d(output).

        ``d_out`` has the output's shape ``[groups, B, max(outs)]``; ``cache`` comes from
        :meth:`forward_cached` (the last call). Gradients are written into the existing ``.grad``
        tensors when present (the flat-optimizer views), else allocated.
        """
        if torch.is_grad_enabled():
            with torch.no_grad():
                return self.backward_cached(cache, d_out)
        d = d_out
        bufs = self._buffers_for(d.shape[1])
        relu = self.activation == "relu"
        for i in range(len(self._layers) - 1, -1, -1):
            (w, b, t), h = self._layers[i], cache[2 * i]
            if w.grad is None:
                w.grad, b.grad = torch.empty_like(w), torch.empty_like(b)
            if t:  # stored [groups, out, in]: dW^T = d^T h
                torch.bmm(d.transpose(1, 2), h, out=w.grad)
            else:
                torch.bmm(h.transpose(1, 2), d, out=w.grad)
            torch.sum(d, dim=1, keepdim=True, out=b.grad)
            if i == 0:
                break
            grad_in = bufs.input_grads[i]
            torch.bmm(d, w if t else w.transpose(1, 2), out=grad_in)
            d = _relu_backward(grad_in, cache[2 * i - 1], 0.0) if relu else grad_in.mul_(cache[2 * i - 1])


class _Buffers:
    """Per batch size: each layer's output, each activation's derivative, each layer's input
    gradient (``[groups, rows, width]``), and NumPy views of the first two.

    They are contiguous views of the front of one flat ``storage``, kept when the batch size changes
    and it is large enough (an on-policy rollout's row count moves by the few rows that only reset
    an env), so the addresses stay the same."""

    def __init__(self, mlp: StackedMLP, rows: int, storage: torch.Tensor | None = None) -> None:
        g = mlp.groups
        shapes = [(w.shape[2], w.shape[1]) if t else (w.shape[1], w.shape[2]) for w, _, t in mlp._layers]  # (in, out)
        relu = mlp.activation == "relu"
        # tanh: layer i's input gradient goes into layer i-1's output buffer, which (as layer i's
        # input) is last read by layer i's weight gradient, computed just before: a smaller working
        # set. relu reads its derivative off that output after the product, so it gets its own
        # input gradients and no derivative buffers.
        hidden = [n_out for _, n_out in shapes[:-1]]
        widths = [n_out for _, n_out in shapes] + ([n_in for n_in, _ in shapes[1:]] if relu else hidden)
        need = g * rows * sum(widths)
        w0 = mlp._layers[0][0]
        if storage is None or storage.numel() < need or storage.dtype != w0.dtype or storage.device != w0.device:
            storage = torch.empty(need, dtype=w0.dtype, device=w0.device)
        self.storage, self.rows = storage, rows
        views, offset = [], 0
        for width in widths:
            views.append(storage[offset:offset + g * rows * width].view(g, rows, width))
            offset += g * rows * width
        n = len(shapes)
        self.outputs = views[:n]
        self.derivs = [] if relu else views[n:]
        self.input_grads: list[torch.Tensor | None] = [None, *(views[n:] if relu else self.outputs[:-1])]
        # NumPy views, made once (``Tensor.numpy()`` costs ~1 µs a call): tanh and its derivative run in NumPy
        cpu = storage.device.type == "cpu"
        self.np_outputs = [o.numpy() if cpu else None for o in self.outputs]
        self.np_derivs = [o.numpy() if cpu else None for o in self.derivs]
