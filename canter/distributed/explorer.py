"""Explorers: a vector env plus a copy of the Agent that acts with the weights the learner sends.

An :class:`Explorer` is plain Python; :class:`ExplorerActor` builds one inside a Ray actor from
the run's config. A rollout returns a dict of numpy arrays (time-major ``[T, N, ...]``), which
Ray stores in its object store as arrays, never as per-step Python objects.
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import numpy as np
import torch

from canter.agents.agent import Agent
from canter.algorithms.base import Algorithm
from canter.envs.vector import VecEnv
from canter.errors import CanterError
from canter.trainers.off_policy import random_actions
from canter.trainers.on_policy import env_rows, rollout_rows  # noqa: F401 (env_rows: re-exported)
from canter.utils import stream_rng, to_numpy

#: Ape-X exploration: explorer i of N uses epsilon = BASE ** (1 + ALPHA * i / (N - 1)) (Horgan et al. 2018)
APEX_EPSILON, APEX_ALPHA = 0.4, 7.0


def apex_epsilon(index: int, count: int) -> float:
    """Ape-X's per-explorer epsilon: 0.4 for the first explorer down to 0.4**8 for the last."""
    if count <= 1:
        return APEX_EPSILON
    return APEX_EPSILON ** (1.0 + APEX_ALPHA * index / (count - 1))


def set_exploration(algorithm: Algorithm, index: int, count: int) -> None:
    """Give explorer ``index`` of ``count`` its own exploration.

    An algorithm may define ``set_explorer(index, count)``; otherwise one with an ``epsilon``
    attribute (DQN) gets Ape-X's epsilon, except with NoisyNet (its epsilon stays 0: each
    explorer draws its own noise, :func:`load_explorer_weights`), and stochastic policies keep
    their own noise.
    """
    hook = getattr(algorithm, "set_explorer", None)
    if hook is not None:
        hook(index, count)
    elif hasattr(algorithm, "epsilon") and not getattr(algorithm, "noisy", False):
        algorithm.epsilon = apex_epsilon(index, count)


def acting_modules(algorithm: Algorithm) -> dict[str, torch.nn.Module]:
    """The networks an explorer needs: all modules except target networks (``*_target``)."""
    names = getattr(algorithm, "acting_modules", None)
    modules = algorithm.modules()
    if names is not None:
        return {k: modules[k] for k in names}
    return {k: m for k, m in modules.items() if not k.endswith("_target")}


def explorer_weights(agent: Agent) -> dict[str, Any]:
    """What explorers load: acting weights and observation statistics, as numpy arrays."""
    modules = {k: {n: t.detach().cpu().numpy() for n, t in m.state_dict().items()}
               for k, m in acting_modules(agent.algorithm).items()}
    return {"modules": modules, "obs_rms": agent.obs_rms.state_dict() if agent.obs_rms else None}


def load_explorer_weights(agent: Agent, weights: dict[str, Any]) -> None:
    """Load what :func:`explorer_weights` produced into an explorer's Agent copy."""
    modules = agent.algorithm.modules()
    for name, state in weights["modules"].items():
        modules[name].load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    keep = getattr(agent, "keep_pixel_statistics", None)  # a learner normalising pixels as before 2026-11-27
    if keep is not None:
        keep(weights.get("obs_rms"))
    if agent.obs_rms is not None and weights.get("obs_rms"):
        agent.obs_rms.load_state_dict(weights["obs_rms"])
    if getattr(agent.algorithm, "noisy", False):  # NoisyNet: the explorer's own noise, not the learner's sample
        agent.algorithm.new_noise()


def rollout_array(shape: tuple[int, ...], dtype: Any, zeros: bool = False, knob: str = "n_steps",
                  copies: int | None = None, agents: bool = False) -> np.ndarray:
    """One of a rollout's ``[T, N, ...]`` arrays (``np.empty``, or ``np.zeros``); one too big for
    memory (or for NumPy's dimension limit) is a one-line :class:`CanterError` naming the
    hyperparameter ``knob`` that sets its length (``n_steps``; Ape-X: ``train_freq``). ``copies`` and
    ``agents`` (as :func:`rollout_rows` takes them) tell a multi-agent env's ``N`` rows as agent rows
    ("4 agent rows (2 env copies x 2 agents)", which was "4 envs"); None: the rows are envs."""
    try:
        return np.zeros(shape, dtype) if zeros else np.empty(shape, dtype)
    except (MemoryError, ValueError) as exc:
        steps = f"n_steps {shape[0]:,}" if knob == "n_steps" else f"{shape[0]:,} steps ({knob})"
        rows = rollout_rows(shape[1], shape[1] if copies is None else copies, agents)
        raise CanterError(f"a rollout of {steps} x {rows} does not fit in memory "
                          f"({exc}); lower hparams.{knob}") from None


def info_entries(info: dict[str, Any], keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The entries ``keys`` of a vector step's ``info``, each with its ``_key`` mask where the env gave one."""
    return {k: np.array(info[k]) for key in keys for k in (key, "_" + key) if k in info}


def nbytes(tree: Any) -> int:
    """Total bytes of the numpy arrays in a nested dict/list."""
    if isinstance(tree, np.ndarray):
        return tree.nbytes
    if isinstance(tree, dict):
        return sum(nbytes(v) for v in tree.values())
    if isinstance(tree, (list, tuple)):
        return sum(nbytes(v) for v in tree)
    return 0


class Explorer:
    """Steps a vector env with an Agent copy and returns what the learner's buffers take.

    Observation statistics are the learner's: the explorer normalises with the statistics it was
    sent and never updates them, so the learner can recompute exactly what the explorer saw.
    """

    #: an in-process explorer's env snapshot (a resume) leaves out its agent: the learner's, saved
    #: with the checkpoint
    resume_skip = ("agent",)

    def __init__(self, agent: Agent, env: VecEnv, index: int = 0, count: int = 1, seed: int = 0,
                 per_explorer_exploration: bool = True) -> None:
        self.agent, self.env, self.index = agent, env, index
        self.version = -1
        self.rng = stream_rng(seed, "explorer")
        if per_explorer_exploration:
            set_exploration(agent.algorithm, index, count)
        self.seed = seed
        self.obs = env.reset(seed=seed)

    def reset(self, seed: int) -> None:
        """Start fresh episodes in every env, seeded from ``seed`` (nothing to do if its envs were
        just reset with it), and draw random actions (Ape-X's warm-up) from a new stream of it: kept,
        the stream of the seed it was built with would restart a resumed run's draws from the start
        of the interrupted run's."""
        if seed != self.seed:
            self.seed = seed
            self.rng = stream_rng(seed, "explorer")
            self.obs = self.env.reset(seed=seed)

    def rollout(self, weights: dict[str, Any] | None, version: int, n_steps: int, *, bootstrap: bool = False,
                random: bool = False, info_keys: tuple[str, ...] = ()) -> dict[str, Any]:
        """Act for ``n_steps`` vector steps and return the trajectory as numpy arrays.

        ``weights`` (from :func:`explorer_weights`) are loaded unless this explorer already has
        ``version``; ``None`` keeps the current ones. Keys: ``obs`` (raw, the env's dtype),
        ``actions`` (algorithm space), ``log_probs`` and ``values`` (when the algorithm returns
        them), ``rewards``, ``terminated``, ``dones``, ``valid`` — all ``[T, N, ...]`` — plus
        ``last_obs``, ``last_values`` (with ``bootstrap``), ``observed`` (``[T, N]``, only where some
        row of ``obs`` is not a real observation: :attr:`VecEnv.observed`), finished ``episode_returns``,
        ``episode_lengths``, ``episode_envs`` (each one's sub-env) and ``episode_rows`` (the row ``t`` it
        ended on), and ``version``, ``index``, ``pid``, ``steps``, ``seconds``.
        """
        start = time.perf_counter()
        if weights is not None and version != self.version:
            load_explorer_weights(self.agent, weights)
        self.version = version
        agent, env, algorithm = self.agent, self.env, self.agent.algorithm
        reset_noise = getattr(algorithm, "reset_noise", None)  # per-episode action noise (TD3/DDPG's OU)
        T, N = n_steps, env.num_envs
        copies, agents = env_rows(env)  # how a rollout too big for memory tells its rows
        obs_space = env.single_observation_space
        obs = rollout_array((T, N) + obs_space.shape, obs_space.dtype, copies=copies, agents=agents)
        actions = log_probs = values = None
        rewards = rollout_array((T, N), np.float32, copies=copies, agents=agents)
        terminated = rollout_array((T, N), np.float32, copies=copies, agents=agents)
        dones = rollout_array((T, N), np.float32, copies=copies, agents=agents)
        valid = rollout_array((T, N), bool, copies=copies, agents=agents)
        observed = None  # [T, N] where some observation is not a real one (a multi-agent env's departed agents)
        returns: list[float] = []
        lengths: list[int] = []
        successes: list[float] = []
        ended: list[int] = []  # each finished episode's sub-env (a multi-agent env's: which agent)
        ended_rows: list[int] = []  # ... and the rollout row (vector step) it ended on
        infos: list[dict[str, np.ndarray]] = []
        for t in range(T):
            if random:
                env_actions, acts = random_actions(agent, N, self.rng, self.obs)
                logp = value = None
            else:
                with torch.inference_mode():
                    out = algorithm.act(agent.obs_to_tensor(self.obs), deterministic=False)
                env_actions = agent.to_env_actions(out.actions)
                acts = to_numpy(out.actions)  # in-process, the explorer acts with the learner's agent (maybe on a GPU)
                logp = None if out.log_probs is None else to_numpy(out.log_probs)
                value = None if out.values is None else to_numpy(out.values)
            if actions is None:
                actions = rollout_array((T,) + acts.shape, acts.dtype, copies=copies, agents=agents)
            if logp is not None and log_probs is None:
                log_probs = rollout_array((T, N), np.float32, zeros=True, copies=copies, agents=agents)
            if value is not None and values is None:
                values = rollout_array((T, N), np.float32, zeros=True, copies=copies, agents=agents)
            seen = getattr(env, "observed", None)  # of self.obs, the observations acted on (the step replaces it)
            step = env.step(env_actions)
            restart = step.terminated | step.truncated | ~step.valid  # TD3/DDPG's OU noise: also after a reset-only
            if reset_noise is not None and restart.any():  # step (its ignored action advanced it; the off-policy trainer)
                reset_noise(torch.from_numpy(restart))
            if seen is not None and observed is None:
                observed = np.ones((T, N), bool)
            if observed is not None:
                observed[t] = True if seen is None else seen
            obs[t], actions[t] = self.obs, acts
            if logp is not None:
                log_probs[t] = logp
            if value is not None:
                values[t] = value
            rewards[t], terminated[t], valid[t] = step.reward, step.terminated, step.valid
            if info_keys:
                infos.append(info_entries(env.info, info_keys))
            dones[t] = step.terminated | step.truncated
            returns += env.finished_returns.tolist()
            lengths += env.finished_lengths.tolist()
            ended += env.finished_envs.tolist()
            ended_rows += [t] * len(env.finished_envs)
            success = getattr(env, "finished_success", None)  # NaN where the env reports no is_success
            ok = success is not None and len(success) == len(env.finished_returns)
            successes += success.tolist() if ok else [float("nan")] * len(env.finished_returns)
            self.obs = step.obs
        out_data: dict[str, Any] = {
            "obs": obs, "actions": actions, "rewards": rewards, "terminated": terminated, "dones": dones,
            "valid": valid, "last_obs": np.array(self.obs),
            "episode_returns": np.asarray(returns, np.float64), "episode_lengths": np.asarray(lengths, np.int64),
            "episode_successes": np.asarray(successes, np.float64), "episode_envs": np.asarray(ended, np.int64),
            "episode_rows": np.asarray(ended_rows, np.int64),
        }
        if observed is not None:
            out_data["observed"] = observed
        if info_keys:
            out_data["infos"] = infos
        if log_probs is not None:
            out_data["log_probs"] = log_probs
        if values is not None:
            out_data["values"] = values
        if bootstrap:
            out_data["last_values"] = to_numpy(agent.value(self.obs)).astype(np.float32)
        out_data.update(version=version, index=self.index, pid=os.getpid(), steps=T * N,
                        seconds=time.perf_counter() - start)
        return out_data

    def close(self) -> None:
        """Close the env."""
        self.env.close()


#: how far apart the env seed blocks of an explorer slot's replacements are: the first replacement of
#: slot 0 was seeded ``seed + 1_000_003``, the very seed of the run's first evaluation episode
REPLACEMENT_SEED_STRIDE = 100_000_007


class ExplorerActor:
    """The body of a Ray explorer actor: builds its env and Agent copy from the run's config.

    Explorer ``i``'s vector env is reset with ``seed + i * n_envs``: with sync or async
    vectorisation its sub-env ``j`` gets ``seed + i * n_envs + j`` (the seeds a single process with
    all the envs would use); a native vectorised env seeds one generator for its sub-envs with that
    base seed. Replacement ``g`` of a slot (``generation``) adds ``g * REPLACEMENT_SEED_STRIDE``.

    An exception of the constructor (an env that cannot be built on this node, a user module that
    fails to import) is kept and raised by every call, the pool's first one included: Ray then hands
    the pool that exception itself (``RayTaskError.cause``), where a constructor that raised would
    leave only its traceback's text (``ActorDiedError``).
    """

    def __init__(self, index: int, count: int, run: Any, algo_cfg: Any, generation: int = 0,
                 spaces: tuple[Any, Any] | None = None) -> None:
        """``spaces``: the learner's (observation, action) spaces; an env with others cannot act with its
        weights (the explorer fails to start, naming both)."""
        self.failure: Exception | None = None
        try:
            self._build(index, count, run, algo_cfg, generation, spaces)
        except Exception as exc:  # noqa: BLE001 - raised by every call (see the class docstring)
            self.failure = exc

    def _check(self) -> None:
        if self.failure is not None:
            raise self.failure

    def _build(self, index: int, count: int, run: Any, algo_cfg: Any, generation: int,
               spaces: tuple[Any, Any] | None) -> None:
        from canter.api import make_agent
        from canter.config_imports import config_imports
        from canter.envs import make_vec_env, spaces_mismatch
        from canter.envs.turns import bind_opponents

        config_imports(run.imports)  # a fresh process: the user modules registering the run's names
        env = make_vec_env(run.env, run.n_envs, run.vectorization, run.env_kwargs, training=True,
                           central_state=run.central_state)
        # a replacement's block lies far from the evaluation seeds (seed + 1_000_003 + 7919 k, trainers/base.py)
        self.offset = index * run.n_envs + generation * REPLACEMENT_SEED_STRIDE
        self.agent_offset = 7919 * (index + 1) + generation
        seed = run.seed + self.offset
        try:
            here = (env.single_observation_space, env.single_action_space)
            mismatch = None if spaces is None else spaces_mismatch(spaces, here)
            if mismatch:  # (the weights would not load: 'Error(s) in loading state_dict', 4 replacements later)
                raise CanterError(f"its env does not match the learner's: {mismatch}")
            agent = make_agent(dataclasses.replace(run, seed=run.seed + self.agent_offset),
                               algo_cfg, env.single_observation_space, env.single_action_space)
            bind_opponents(env, agent, run.env, run.env_kwargs)  # the explorer's copy of the policy
            self.explorer = Explorer(agent, env, index, count, seed=seed)
        except BaseException:
            env.close()
            raise

    def reset(self, seed: int) -> None:
        """Fresh episodes from the run seed ``seed``: this explorer's block of it (as when built), and
        its agent's sampling generator(s) seeded from ``seed`` too (as when built), so that a resumed
        run's explorer does not replay the interrupted run's action noise from its start."""
        self._check()
        if seed + self.offset == self.explorer.seed:  # its envs were just reset (built) with it
            return
        self.explorer.reset(seed + self.offset)
        algorithm = self.explorer.agent.algorithm
        for i, algo in enumerate(getattr(algorithm, "algorithms", {"": algorithm}).values()):
            algo.generator.manual_seed(seed + self.agent_offset + i)  # policy i: seed + i (make_agent)

    def rollout(self, weights: dict[str, Any] | None, version: int, n_steps: int, **kw: Any) -> dict[str, Any]:
        """See :meth:`Explorer.rollout`."""
        self._check()
        return self.explorer.rollout(weights, version, n_steps, **kw)

    def close(self) -> None:
        """Close the explorer's env (the pool's last call before it kills the actor); nothing where the constructor
        failed (it closed what it had built)."""
        explorer = getattr(self, "explorer", None)
        if explorer is not None:
            self.explorer = None
            explorer.close()

    def pid(self) -> int:
        """The actor's process id (the pool's first call: it raises what the constructor raised)."""
        self._check()
        return os.getpid()
