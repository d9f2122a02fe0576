"""The part of :class:`~canter.trainers.base.Trainer` that saves and restores everything a resumed run needs to
continue exactly: counters, recent returns, the last evaluation, the envs, the random generators, hooks, learning
rate control, the divergence guard and each family's data (:meth:`ResumableState.data_state`)."""
from __future__ import annotations

import logging
import random
from typing import Any

import numpy as np
import torch

from canter.envs.state import capture_env, restore_env
from canter.errors import CanterError
from canter.trainers.evaluation import EvalResult

log = logging.getLogger("canter")


class ResumableState:
    """Exact-resume state of a trainer (a mixin of :class:`~canter.trainers.base.Trainer`, whose attributes it reads)."""

    def progress_state(self) -> dict[str, Any]:
        """Counters, the reward buffer and the last evaluation (part of :meth:`resume_state`)."""
        ev = self.last_eval
        return {
            "counters": {**self.state(), "next_eval": self._next_eval},
            "recent_returns": np.asarray(self.recent_returns, dtype=np.float64),
            "recent_successes": np.asarray(self.recent_successes, dtype=np.float64),
            "last_eval": None if ev is None else {"mean_return": ev.mean_return, "std_return": ev.std_return,
                                                   "returns": list(ev.returns), "lengths": list(ev.lengths),
                                                   "successes": list(ev.successes), "deterministic": ev.deterministic,
                                                   "n_episodes": ev.n_episodes},
        }

    def load_progress(self, state: dict[str, Any]) -> None:
        """Restore :meth:`progress_state`."""
        c = state["counters"]
        self.step, self.iteration_count, self.episode_count = int(c["step"]), int(c["iteration"]), int(c["episodes"])
        self.best_eval_return, self.evaluations = c["best_eval_return"], int(c["evaluations"])
        self.best_rolling_return = c.get("best_rolling_return")
        self.elapsed_before = float(c.get("wall_time", 0.0))
        self._next_eval = c.get("next_eval")
        self.recent_returns.clear()
        self.recent_returns.extend(float(r) for r in state["recent_returns"])
        self.recent_successes.clear()
        self.recent_successes.extend(float(r) for r in state.get("recent_successes", ()))
        ev = state.get("last_eval")
        # which policy played: a checkpoint saved before eval_deterministic has none (its evaluations were greedy);
        # n_episodes: a multi-agent env's episodes (one return per agent), None in an older checkpoint (unknown)
        n_episodes = None if ev is None else ev.get("n_episodes")
        self.last_eval = None if ev is None else EvalResult(ev["mean_return"], ev["std_return"], ev["returns"],
                                                            ev["lengths"], ev.get("successes", []),
                                                            n_episodes=None if n_episodes is None else int(n_episodes),
                                                            deterministic=bool(ev.get("deterministic", True)))

    def data_state(self) -> dict[str, Any]:
        """The data a trainer family keeps between iterations (replay buffers, their generators)."""
        return {}

    def load_data_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`data_state` (``state`` is the whole resume state)."""

    def eval_env_state(self) -> dict[str, Any] | None:
        """The evaluation env's state, or None where there is none or it holds something opaque (it is then built
        afresh on resume, as before). Every evaluation resets it with its own seed, but an env may keep state
        across its episodes (a wrapper's running observation statistics, a curriculum's level), which a resumed
        run's new evaluation env had lost: its evaluations differed from the uninterrupted run's."""
        if self.eval_env is None or not self.evaluates:
            return None
        state, problems = capture_env(self.eval_env)
        return None if problems else state

    def resume_state(self) -> dict[str, Any]:
        """Everything but the agent that a resumed run needs to continue exactly (between iterations)."""
        env_state, problems = capture_env(self.env) if self.env is not None else (None, [])
        np_state = np.random.get_state(legacy=False)
        py_version, py_state, py_gauss = random.getstate()
        return {
            **self.progress_state(),
            "obs": self.obs,
            "env": env_state if not problems else None,
            "eval_env": self.eval_env_state(),
            "env_problems": problems,
            "rng": {"python": [py_version, list(py_state), py_gauss], "numpy": np_state,
                    "torch": torch.get_rng_state()},
            "hooks": self.hooks.state_dict(),
            "lr": self.lr.state_dict(),
            "guard": self.guard.state_dict(),
            **self.data_state(),
        }

    def load_resume_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`resume_state` after :meth:`setup` and an env reset (see ``__call__``)."""
        self.load_progress(state)
        self.hooks.load_state_dict(state["hooks"])
        self.lr.load_state_dict(state["lr"])
        self.guard.load_state_dict(state["guard"])
        if self.env is None:  # offline: no training env, nothing of one to restore
            self.resume_exact = True
        elif state.get("env") is not None:
            restore_env(self.env, state["env"], "state.trainer.env")
            obs = state["obs"]  # a dict policy -> rows with several policies; None where explorers act
            obs = ({k: np.array(v) for k, v in obs.items()} if isinstance(obs, dict)
                   else None if obs is None else np.array(obs))
            if isinstance(self.obs, np.ndarray) and not (isinstance(obs, np.ndarray) and obs.shape == self.obs.shape
                                                         and obs.dtype.kind in "biuf"):
                raise CanterError(f"'state.trainer.obs' must be the env's observations, of shape {self.obs.shape}")
            self.obs = obs
            self.resume_exact = True
        else:  # the env holds state that cannot be saved: start fresh episodes with a new seed
            log.warning("resume: the env's state could not be saved (%s); continuing with fresh episodes, so the "
                        "resumed run is valid but not identical to an uninterrupted one",
                        ", ".join(state.get("env_problems", [])[:3]))
            self.obs = self.env.reset(seed=self.run.seed + 7_777_777 + self.step)
            reset_returns = getattr(self.agent, "reset_returns", None)  # reward normalisation: new episodes
            if reset_returns is not None:
                reset_returns()
            self.resume_exact = False
        if state.get("eval_env") is not None and self.eval_env is not None:  # (a checkpoint before 2026-11-27: none)
            restore_env(self.eval_env, state["eval_env"], "state.trainer.eval_env")
        py_version, py_state, py_gauss = state["rng"]["python"]
        random.setstate((py_version, tuple(py_state), py_gauss))
        np.random.set_state(state["rng"]["numpy"])
        torch.set_rng_state(state["rng"]["torch"])
        self.load_data_state(state)
        if self.opponents_changed:  # another opponent than the uninterrupted run's plays on (resume_checks)
            self.resume_exact = False

    #: the checkpoint that :meth:`resume_from` was given the state of, named by errors while it is restored
    resume_source: Any = None

    def resume_from(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (a :meth:`resume_state`) when the generator starts."""
        self._resume = state
