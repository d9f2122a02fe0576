"""The divergence guard: non-finite data, gradients, parameters or losses stop training cleanly.

Checks, from cheapest to most thorough:

* environment data: the observations and rewards of every vector step, before they reach a
  buffer or the networks (this fault stops the run in every mode: a lower learning rate cannot
  fix an env);
* gradients: a pre-step hook on every optimizer (``algorithm.optimizers()``) checks all gradients
  of that optimizer before ``step()``; a non-finite loss gives non-finite gradients, so the
  update is never applied;
* parameters and the reported losses after each iteration (also the statistics ``after_update`` hooks add).

On a finding the trainer raises :class:`TrainingDiverged` (mode ``stop``: the run directory keeps
its last good checkpoint) or, in mode ``restore``, reloads the last good agent state (taken at the
start and after every finite evaluation), lowers every learning rate and goes on.
"""
from __future__ import annotations

import copy
import logging
import math
import weakref
from typing import Any

import numpy as np
import torch

from canter.errors import CanterError

log = logging.getLogger("canter")


class Divergence(Exception):
    """Raised inside an iteration when a non-finite quantity is found (handled by the trainer); ``hook_stat``: the
    statistic an ``after_update`` hook added, when that is the quantity (not the algorithm's)."""

    def __init__(self, quantity: str, step: int, hook_stat: str | None = None) -> None:
        super().__init__(f"non-finite {quantity} at step {step}")
        self.quantity, self.step, self.hook_stat = quantity, step, hook_stat


class TrainingDiverged(CanterError):
    """Training stopped because a loss, gradient, parameter or observation was not finite."""

    def __init__(self, message: str, quantity: str, step: int) -> None:
        super().__init__(message)
        self.quantity, self.step = quantity, step

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle with every constructor argument (a ``benchmark --jobs`` worker sends it to the parent)."""
        return type(self), (self.args[0], self.quantity, self.step)


def _flat_views(optimizers: Any, params: list[torch.Tensor]) -> tuple[list[Any], list[torch.Tensor]]:
    """``(arrays, rest)``: NumPy views of the flat CPU float buffers of :class:`~canter.optim.FlatOptimizer`
    optimizers whose parameters are all in ``params`` and still views of that buffer, and the
    parameters none of them holds. NumPy's ``isfinite`` over one flat array is ~30x faster than
    torch's per-tensor kernels here (TD3's 367k parameters: 34 µs against ~1 ms)."""
    from canter.optim import FlatOptimizer

    wanted = {id(p) for p in params}
    arrays, covered = [], set()
    for opt in optimizers:
        flat = getattr(opt, "flat", None)
        if (not isinstance(opt, FlatOptimizer) or flat is None or flat.device.type != "cpu"
                or flat.dtype not in (torch.float32, torch.float64)):
            continue
        ptr = flat.untyped_storage().data_ptr()
        if all(id(p) in wanted and p.untyped_storage().data_ptr() == ptr for p in opt.params):
            arrays.append(flat.numpy())
            covered.update(id(p) for p in opt.params)
    return arrays, [p for p in params if id(p) not in covered]


def _all_finite(tensors: list[torch.Tensor]) -> bool:
    """True when no tensor holds NaN or inf (read-only; for parameters)."""
    if not tensors:
        return True
    # one pass, no copies: the largest magnitude of each (the L2 norm overflowed to inf for finite values
    # past ~1.8e19 in float32); inf or NaN anywhere makes it non-finite
    norms = torch._foreach_norm(tensors, math.inf)
    return bool(torch.stack(norms).isfinite().all())


class _GradCheck:
    """Fast all-finite test for a list of gradients, run before every optimizer step.

    Uses the multi-tensor kernel behind ``torch.amp.GradScaler`` (one pass; it multiplies by an
    inverse scale of exactly 1.0, which leaves every value bit-identical), else per-tensor norms.
    """

    def __init__(self, params: list[torch.Tensor]) -> None:
        self.found = torch.zeros(1)
        self.one = torch.ones(1)
        self.fused = hasattr(torch, "_amp_foreach_non_finite_check_and_unscale_") and all(
            p.dtype == torch.float32 and p.device.type == "cpu" for p in params)

    def __call__(self, grads: list[torch.Tensor]) -> bool:
        if not grads:
            return True
        if self.fused:
            self.found.zero_()
            torch._amp_foreach_non_finite_check_and_unscale_(grads, self.found, self.one)
            return not self.found.item()
        return _all_finite(grads)


#: arrays up to this size are summed in Python floats by :func:`_finite_sum` (NumPy's reduction costs ~1.5 µs a call)
SMALL_SUM = 64


def _finite_sum(a: np.ndarray) -> bool:
    """Whether the sum of ``a`` is finite: False where ``a`` holds NaN or inf, and where the sum overflows
    (the caller then looks at the values). Small arrays (one env's observation) are summed as Python floats."""
    if a.size <= SMALL_SUM:
        return math.isfinite(sum(a.ravel().tolist()))
    return math.isfinite(a.sum())


class DivergenceGuard:
    """Watches one trainer's data and algorithm (see the module docstring)."""

    def __init__(self, trainer: Any, mode: str = "stop", lr_factor: float = 0.5, max_restores: int = 3) -> None:
        self.trainer, self.mode = trainer, mode
        self.lr_factor, self.max_restores = lr_factor, max_restores
        self.restores = 0
        self.events: list[dict[str, Any]] = []
        self._good: dict[str, Any] | None = None
        self._handles: list[Any] = []
        self._params: list[tuple[str, torch.Tensor]] | None = None
        #: the parameters' check: flat NumPy views of flat optimizers' buffers, and the other parameters
        self._check: tuple[list[Any], list[torch.Tensor]] | None = None
        #: the algorithm's ``updates`` count when the parameters were last checked (None: never)
        self._checked_updates: int | None = None

    @property
    def enabled(self) -> bool:
        """Whether the guard checks anything (``mode`` is not ``'off'``)."""
        return self.mode != "off"

    # -- checks ------------------------------------------------------------------------------
    def arm(self) -> None:
        """Attach the gradient check to every optimizer of the algorithm."""
        if not self.enabled or self._handles:
            return
        names = {p: f"{m}.{n}" for m, mod in self.trainer.algorithm.modules().items() for n, p in mod.named_parameters()}
        for opt_name, opt in self.trainer.algorithm.optimizers().items():
            params = [p for g in opt.param_groups for p in g["params"]]
            finite = _GradCheck(params)

            known = getattr(opt, "grads_known_finite", None)  # flat optimizers: clipping already looked
            guard = weakref.ref(self)  # the optimizer (the agent's) must not keep the trainer and its envs alive

            def check(*_: Any, params: list = params, opt_name: str = opt_name, finite: _GradCheck = finite,
                      known: Any = known, guard: Any = guard) -> None:
                alive = guard()
                if alive is None or (known is not None and known()):  # a gone trainer's hook checks nothing
                    return
                if not finite([p.grad for p in params if p.grad is not None]):
                    bad = next(p for p in params if p.grad is not None and not torch.isfinite(p.grad).all())
                    raise Divergence(f"gradient of {names.get(bad, opt_name)} (the loss or its gradient is not "
                                     f"finite; optimizer '{opt_name}' did not step)", alive.trainer.step)

            if hasattr(opt, "register_step_pre_hook"):
                self._handles.append(opt.register_step_pre_hook(check))
                weakref.finalize(self, self._handles[-1].remove)  # gone with its trainer
            else:  # an optimizer-like object without torch's hook API: wrap its step
                step = opt.step

                def guarded_step(*args: Any, _step: Any = step, _check: Any = check, **kwargs: Any) -> Any:
                    _check()
                    return _step(*args, **kwargs)

                opt.step = guarded_step
                self._handles.append(None)

    def check_env_data(self, obs: np.ndarray, reward: np.ndarray) -> None:
        """Raise :class:`Divergence` if a vector step's observations or rewards hold NaN or inf."""
        if not self.enabled:
            return
        floats = isinstance(obs, np.ndarray) and obs.dtype.kind == "f"
        if (not floats or _finite_sum(obs)) and _finite_sum(reward):
            return  # the common case: one reduction per array (a sum overflowing is confirmed below)
        if floats and not np.isfinite(obs).all():
            bad = np.flatnonzero(~np.isfinite(obs.reshape(len(obs), -1)).all(axis=1))
            raise Divergence(f"observation from the env (sub-env {bad[0]})", self.trainer.step)
        if not np.isfinite(reward).all():
            raise Divergence(f"reward from the env (sub-env {np.flatnonzero(~np.isfinite(reward))[0]})",
                             self.trainer.step)

    def check_update(self, losses: dict[str, float]) -> None:
        """After an iteration: every reported loss and every trained parameter must be finite.

        Frozen parameters (``requires_grad`` False: target networks) are not checked: they only
        ever take copies or averages of the trained ones, so they stay finite when those do. An
        iteration that reported no losses and left the algorithm's ``updates`` count as it was (an
        off-policy warm-up step before ``learning_starts``) changed no parameter: the pass is skipped
        (it cost more than the env step itself for 256-unit networks).
        """
        if not self.enabled:
            return
        for k, v in losses.items():
            if isinstance(v, float) and not math.isfinite(v):
                raise Divergence(f"loss '{k}' ({v})", self.trainer.step)
        updates = getattr(self.trainer.algorithm, "updates", None)
        if not losses and updates is not None and updates == self._checked_updates:
            return
        self._checked_updates = updates
        if self._params is None:
            self._params = [(f"{m}.{n}", p) for m, mod in self.trainer.algorithm.modules().items()
                            for n, p in mod.named_parameters() if p.requires_grad]
            self._check = _flat_views(self.trainer.algorithm.optimizers().values(), [p for _, p in self._params])
        arrays, rest = self._check
        with torch.no_grad():
            if not (all(np.isfinite(a).all() for a in arrays) and _all_finite(rest)):
                bad = next(name for name, p in self._params if not torch.isfinite(p).all())
                raise Divergence(f"parameter {bad}", self.trainer.step)

    def check_added(self, losses: dict[str, Any], before: dict[str, Any]) -> None:
        """After the ``after_update`` hooks: each statistic they added to ``losses`` (or changed from ``before``,
        the iteration's own) must be finite, as the algorithm's losses are (:meth:`check_update`, which runs before
        the hooks): a hook's NaN was logged and training went on."""
        if not self.enabled:
            return
        for k, v in losses.items():
            if (k not in before or before[k] is not v) and isinstance(v, float) and not math.isfinite(v):
                raise Divergence(f"loss '{k}' ({v}) that an after_update hook reported", self.trainer.step, k)

    # -- last good state -----------------------------------------------------------------------
    def remember(self, keep_restored: bool = False) -> None:
        """Keep a copy of the agent state as the last good one (restore mode only); with
        ``keep_restored``, a last good state that :meth:`load_state_dict` restored (a resumed run) stays."""
        if self.mode == "restore" and not (keep_restored and self._good is not None):
            self._good = copy.deepcopy(self.trainer.agent.state_dict())

    def _no_restore(self) -> str:
        """Why restore mode stopped instead: its restores used up, none allowed, or no good state saved yet."""
        if self.max_restores == 0:
            return " (divergence_max_restores: 0, no restore allowed)"
        if self.restores >= self.max_restores:
            return " (restores exhausted)"
        return " (no good state to restore yet)"

    def handle(self, err: Divergence) -> dict[str, float]:
        """Restore and go on (mode ``restore``, while restores are left) or raise :class:`TrainingDiverged`."""
        t = self.trainer
        event = {"step": err.step, "quantity": err.quantity}
        self.events.append(event)
        env_fault = "from the env" in err.quantity
        if self.mode == "restore" and not env_fault and self._good is not None and self.restores < self.max_restores:
            self.restores += 1
            log.warning("divergence guard: non-finite %s at step %d; restoring the last good state", err.quantity,
                        err.step)  # a stop says it in the error instead (one line)
            # a restore rewinds weights and moments, not the learning-rate schedules: keep the rates in
            # force now, else the LR controller would take the saved (already decayed and scaled) rates
            # for the algorithm's own and apply its decay and scale to them a second time
            rates = {name: [g["lr"] for g in opt.param_groups] for name, opt in t.algorithm.optimizers().items()}
            # the running discounted returns (reward normalisation) are those of the episodes under way, which the
            # restore does not rewind: the saved ones were of other episodes, or of earlier steps of these
            members = list(getattr(t.agent, "agents", {}).values()) or [t.agent]
            returns = [(m, m._returns.copy()) for m in members if isinstance(getattr(m, "_returns", None), np.ndarray)]
            t.agent.load_state_dict(copy.deepcopy(self._good))
            for member, kept in returns:
                member._returns = kept
            for name, opt in t.algorithm.optimizers().items():
                for group, lr in zip(opt.param_groups, rates.get(name, ())):
                    group["lr"] = lr
            floored = getattr(t.lr, "at_min_lr", None)
            if floored is not None and floored():  # every rate at min_lr: none lowered, as a plateau's (it shrank
                # lr_scale and said 'learning rates x0.0625' while the rates stayed at min_lr)
                min_lr = getattr(getattr(t, "run", None), "min_lr", None)
                event["action"] = ("restored the last good state, learning rates at min_lr"
                                   + ("" if min_lr is None else f" ({min_lr:g})"))
                return {}
            t.lr.reduce(self.lr_factor)
            t.lr.apply(t.step)
            event["action"] = f"restored the last good state, learning rates x{t.lr.scale:g}"
            return {}
        event["action"] = "stopped"
        hint = "" if env_fault else (self._no_restore() if self.mode == "restore" else
                                     f"; try {_hint(t)} or divergence_guard: restore")
        if err.hook_stat is not None:  # the algorithm's numbers were finite: no training hint (restores did not help)
            hint = (f"{self._no_restore() if self.mode == 'restore' else ''}; '{err.hook_stat}' came from that "
                    f"hook, not from the algorithm (its losses and parameters were finite): check what the hook "
                    f"computes, and leave a statistic out of losses where it has no value")
        # the env's fault names the env (an async worker's None observation arrives as NaN, nothing else names it)
        env = getattr(getattr(t, "run", None), "env", None) if env_fault else None
        named = f"env '{env}': " if env else ""
        if err.quantity.startswith("reward from the env"):  # the env's fault, not training's: what step() returned
            from canter.envs.vector import STEP_VALUES

            where = err.quantity.removeprefix("reward from the env").strip()
            raise TrainingDiverged(f"{named}the env's step() returned a reward that is not a finite number (None, NaN "
                                   f"or inf) at step {err.step} {where}; {STEP_VALUES}", err.quantity, err.step)
        raise TrainingDiverged(f"{named}training diverged at step {err.step}: non-finite {err.quantity}{hint}",
                               err.quantity, err.step)

    def state_dict(self) -> dict[str, Any]:
        """Restores, events and (restore mode) the last good agent state, which a resumed run restores
        on a divergence as the uninterrupted run would (the state of the last finite evaluation)."""
        state: dict[str, Any] = {"restores": self.restores, "events": [dict(e) for e in self.events]}
        if self.mode == "restore" and self._good is not None:
            state["good"] = self._good
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (a checkpoint without ``good``, from before it was saved, keeps
        the state the run resumes from as the last good one)."""
        self.restores = int(state.get("restores", 0))
        self.events = [dict(e) for e in state.get("events", [])]
        if self.mode == "restore" and state.get("good") is not None:
            self._good = copy.deepcopy(state["good"])


def _hint(trainer: Any) -> str:
    """What a divergence stop suggests lowering: the algorithm's ``divergence_hint``."""
    return getattr(getattr(trainer, "algorithm", None), "divergence_hint", "a lower learning rate")
