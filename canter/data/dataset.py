"""Datasets of transitions for offline training: collect, save, load (safetensors + JSON).

A dataset is a flat set of transitions ``(obs, action, reward, next_obs, terminated,
truncated)`` with the env id and spaces it came from, stored like a checkpoint
(:mod:`canter.checkpoint`: ``NAME.safetensors`` + ``NAME.json``, atomic writes, nothing
unpickled on load). Actions are stored as the env takes them (Discrete actions with the space's
``start``, Box actions in the env's bounds), so a dataset does not depend on the algorithm that
learns from it. ``canter collect`` writes one from a trained run or a random policy.
"""
from __future__ import annotations

import dataclasses
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from canter.ale import registered_spec
from canter.checkpoint import checkpoint_base, load_checkpoint, read_metadata, save_checkpoint
from canter.data.columns import GrowingColumns
from canter.data.dataset_checks import (check_discrete, check_flags, json_info, metadata_problem,
                                        not_dataset_problem, numeric_array)
from canter.data.minari import (  # noqa: F401  (check_minari_id, minari_exists: re-exported)
    _load_minari, _minari_spec, _spec_kwargs, check_minari_id, from_minari, minari_exists, warn_dropped_wrappers,
    write_minari,
)
from canter.envs.spaces import space_from_dict, space_to_dict
from canter.envs.opponents import SNAPSHOTS_KEY
from canter.envs.random_actions import random_env_actions
from canter.envs.spaces import describe_space
from canter.errors import CanterError, CanterWarning, warn
from canter.utils import provenance, stream_rng

KIND = "canter-dataset"
#: ``--dataset minari:ID`` reads a local Minari dataset (the ``offline`` extra)
MINARI_PREFIX = "minari:"
ARRAYS = ("obs", "actions", "rewards", "next_obs", "terminated", "truncated")


@dataclass
class TransitionDataset:
    """Transitions ``[N, ...]`` of one env; ``info`` holds how they were collected (JSON-safe)."""

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_obs: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    env_id: str
    observation_space: gym.Space
    action_space: gym.Space
    info: dict[str, Any] = field(default_factory=dict)
    #: the ``gymnasium.make`` keyword arguments of the env the data came from (an offline run
    #: evaluates on the same env)
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    #: the ``checkpoint_id`` of the file it was loaded from or last saved to (None before that): an
    #: offline run records it, so ``--resume`` can refuse a dataset rewritten since
    dataset_id: str | None = None
    #: the user modules that register the env (and the run's components) it came from: an offline run
    #: imports them, so that a registered env id is found in a new process (``registry.user_modules``)
    user_modules: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        from canter.envs.packing import needs_packing

        if needs_packing(self.observation_space):  # Dict / Tuple / MultiBinary / MultiDiscrete: as the env gives them
            self._pack_observations()
        for name in ARRAYS:  # lists (a gymnasium loop's) as arrays: they had no .shape (an AttributeError traceback)
            setattr(self, name, numeric_array(getattr(self, name), name))
        for name in ("rewards", "terminated", "truncated"):  # one value a row: [N, 1] (d3rlpy's) broadcast wrongly
            values = getattr(self, name)
            if values.ndim == 2 and values.shape[1] == 1:
                values = values.reshape(-1)
            if values.ndim != 1:
                raise CanterError(f"dataset {name} have shape {values.shape}; a dataset holds one value per transition "
                                  f"(shape [N], or [N, 1])")
            setattr(self, name, values)
        n = len(self.rewards)
        if n == 0:
            raise CanterError("a dataset needs at least one transition")
        for name in ARRAYS:
            if len(getattr(self, name)) != n:
                raise CanterError(f"dataset arrays differ in length: {name} has {len(getattr(self, name))}, "
                                  f"rewards {n}")
        obs_shape = tuple(self.observation_space.shape or ())
        for name in ("obs", "next_obs"):
            if getattr(self, name).shape[1:] != obs_shape:
                raise CanterError(f"dataset {name} have shape {getattr(self, name).shape[1:]}, but the observation "
                                  f"space has {obs_shape}")
        act_shape = tuple(self.action_space.shape or ())
        if self.actions.shape[1:] != act_shape and np.prod(self.actions.shape[1:]) == np.prod(act_shape) == 1:
            self.actions = self.actions.reshape(n, *act_shape)  # one value a row: d3rlpy's [N, 1] Discrete actions
        if self.actions.shape[1:] != act_shape:
            raise CanterError(f"dataset actions have shape {self.actions.shape[1:]}, but the action space has "
                              f"{act_shape}")
        for name in ("obs", "next_obs", "actions", "rewards"):  # a NaN would only show as a diverged update
            values = np.asarray(getattr(self, name))
            if np.issubdtype(values.dtype, np.floating) and not np.isfinite(values).all():
                row = int(np.flatnonzero(~np.isfinite(values.reshape(len(values), -1)).all(axis=1))[0])
                raise CanterError(f"dataset {name} hold non-finite values (NaN or inf), first at row {row}; "
                                  f"offline training needs finite data")
        from canter.models.cnn import image_pixels

        for name in ("obs", "next_obs"):  # float images of 0-255 pixels: the encoders take floats as scaled
            setattr(self, name, image_pixels(np.asarray(getattr(self, name)), self.observation_space, f"dataset {name}: "))
        # as the env takes and gives them: start .. start + n - 1 (the one-hot encoder and the losses fail otherwise)
        check_discrete(self.actions, self.action_space, "action", "action", "are stored as the env takes them, ")
        for name in ("obs", "next_obs"):
            check_discrete(getattr(self, name), self.observation_space, name, "observation")
        if isinstance(self.action_space, gym.spaces.Box):  # converted into [-1, 1] by clipping: say so once
            low, high = self.action_space.low.reshape(1, -1), self.action_space.high.reshape(1, -1)
            flat = np.asarray(self.actions).reshape(len(self.actions), -1)
            outside = int(((flat < low) | (flat > high)).any(axis=1).sum())
            if outside:
                warn(CanterWarning(
                    f"{outside:,} of {len(flat):,} dataset actions lie outside the action space's bounds "
                    f"({describe_space(self.action_space)}, low {low.min():g} .. high {high.max():g}); the "
                    f"algorithms clip them to the bounds"))
        self.rewards = self.rewards.astype(np.float32, copy=False)
        self.terminated = check_flags(self.terminated, "terminated")  # a NaN or 0.5 became a set flag, silently
        self.truncated = check_flags(self.truncated, "truncated")

    def __len__(self) -> int:
        return len(self.rewards)

    def _pack_observations(self) -> None:
        """Structured observations packed into vectors of the space canter's envs give, which the space becomes
        (:func:`~canter.envs.packing.pack_rows`): it was 'dataset arrays differ in length: obs has 2' (a Dict's
        entry count)."""
        from canter.envs.packing import ObservationPacker, pack_rows

        packer = ObservationPacker(self.observation_space, self.action_space)
        for name in ("obs", "next_obs"):
            setattr(self, name, pack_rows(getattr(self, name), packer, f"dataset {name}"))
        self.observation_space = packer.space

    def episode_returns(self) -> np.ndarray:
        """Returns of the complete episodes, assuming transitions are stored in order per env
        (as :func:`collect` stores them with one env)."""
        ends = np.flatnonzero(self.terminated | self.truncated)
        sums = np.cumsum(self.rewards, dtype=np.float64)
        totals = sums[ends]
        return np.diff(np.concatenate([[0.0], totals]))

    def save(self, path: str | Path) -> Path:
        """Write ``path``.safetensors + ``path``.json atomically; returns the common base path. A ``path`` that is a
        directory is refused (it wrote ``DIR.safetensors`` and ``DIR.json`` beside it, as ``canter collect --out DIR``
        did)."""
        base = checkpoint_base(path)
        if base.is_dir():
            raise CanterError(f"'{base}' is a directory; a dataset is written as a file pair named after it: give a "
                              f"name, such as '{base / 'dataset'}'")
        state = {name: np.ascontiguousarray(getattr(self, name)) for name in ARRAYS}
        meta = {
            "kind": KIND, "env": self.env_id, "transitions": len(self),
            "observation_space": space_to_dict(self.observation_space),
            "action_space": space_to_dict(self.action_space),
            **provenance(), "info": json_info(self.info),
            "env_kwargs": self.env_kwargs, "user_modules": list(self.user_modules),
        }
        base = save_checkpoint(path, state, meta, "dataset")  # its errors name a dataset, not a checkpoint
        self.dataset_id = read_metadata(base, "dataset")["checkpoint_id"]
        return base

    def to_minari(self, dataset_id: str) -> int:
        """Write the complete episodes as a local Minari dataset ``dataset_id`` (Arrow format; the
        ``offline`` extra) and return how many transitions it holds. Transitions must be stored in
        episode order, as :func:`collect` stores them; a trailing incomplete episode is left out."""
        return write_minari(self, dataset_id)

    def env_spec(self) -> Any:
        """The env id, or with ``env_kwargs`` the gymnasium spec that carries them (for Minari)."""
        try:
            spec = registered_spec(self.env_id)
        except gym.error.Error as exc:
            cause = str(exc) if str(exc).startswith("cannot import module") else "is not registered with gymnasium"
            raise CanterError(f"a Minari dataset records a gymnasium env; '{self.env_id}': {cause} (multi-agent "
                              f"and canter-only envs are saved as canter datasets: --out PATH)") from None
        module = self.env_id.rpartition(":")[0]
        if module and not isinstance(spec.entry_point, str):  # Minari writes the spec as JSON
            name = getattr(spec.entry_point, "__name__", "")
            name = name if name.isidentifier() else "Class"
            raise CanterError(f"a Minari dataset records its env's entry point as text; '{self.env_id}' is registered "
                              f"with a callable: register it with entry_point='{module}:{name}', or save a canter "
                              f"dataset (--out PATH)")
        if not self.env_kwargs and not module:
            return self.env_id
        kwargs = dict(self.env_kwargs)
        steps = kwargs.pop("max_episode_steps", None)  # null: the env's own limit, as canter's envs take it
        steps = spec.max_episode_steps if steps is None else steps
        # a module's env keeps its module in the id, so that reading the dataset back imports it
        return dataclasses.replace(spec, id=self.env_id, kwargs={**spec.kwargs, **kwargs}, max_episode_steps=steps)

    @classmethod
    def load(cls, path: str | Path) -> TransitionDataset:
        """Read a dataset written by :meth:`save` (tensors from safetensors only; nothing is unpickled),
        or ``minari:ID``, a local Minari dataset (:func:`from_minari`). Either warns in one line where the data's env
        was wrapped in what canter's env drops (a Minari spec's wrappers; saved: ``info["env_wrappers"]``)."""
        if str(path).startswith(MINARI_PREFIX):
            return from_minari(str(path)[len(MINARI_PREFIX):])
        read_dataset_metadata(path)  # clear errors for a missing file or a checkpoint given instead
        base = checkpoint_base(path)
        state, meta = load_checkpoint(base, "dataset")
        try:
            spaces = [space_from_dict(meta[k]) for k in ("observation_space", "action_space")]
            arrays = {name: np.asarray(state[name]) for name in ARRAYS}
        except (KeyError, TypeError, ValueError, AttributeError, CanterError) as exc:  # CanterError: a bad space
            raise CanterError(f"dataset {base} is corrupt: {exc if isinstance(exc, CanterError) else repr(exc)}") from None
        try:
            data = cls(**arrays, env_id=str(meta.get("env")), observation_space=spaces[0], action_space=spaces[1],
                       info=dict(meta.get("info") or {}), env_kwargs=dict(meta.get("env_kwargs") or {}),
                       dataset_id=meta.get("checkpoint_id"), user_modules=list(meta.get("user_modules") or []))
        except CanterError as exc:  # what the file holds (no transition, NaN, a Discrete action outside the space)
            raise CanterError(f"{exc} (dataset {base})") from None
        stated = meta.get("transitions")  # the JSON is not under the sha256: an edit, or another tool's writer
        if stated is not None and stated != len(data):
            raise CanterError(f"dataset {base} is corrupt: its JSON says {stated:,} transitions, its arrays hold "
                              f"{len(data):,} (was {base.name}.json edited? restore it or collect the dataset again)")
        wrappers = data.info.get("env_wrappers")  # a Minari dataset's, saved: its wrappers are dropped here too
        if isinstance(wrappers, list) and wrappers:
            warn_dropped_wrappers(f"dataset {base} (from {data.info.get('source') or 'a Minari dataset'})",
                                  data.env_id, [str(w) for w in wrappers])
        return data


def dataset_missing(path: str | Path) -> bool:
    """Whether neither file of the dataset saved as ``path`` (``PATH.json``, ``PATH.safetensors``) is there
    (a Minari id is never missing here: it is looked up in the local Minari store)."""
    if str(path).startswith(MINARI_PREFIX):
        return False
    if Path(path).name in ("", ".."):  # '.', '/', '..': a directory, which has no name to add .json to
        return True
    base = checkpoint_base(path)
    return not any(base.with_name(base.name + ext).exists() for ext in (".json", ".safetensors"))


def _missing_dataset_hint(path: str | Path) -> str:
    """What to do about a dataset not found at ``path``: where ``path`` is a directory, that it is a run to
    collect from, or the datasets the folder holds (other libraries take a dataset folder)."""
    folder = Path(path)
    if not folder.is_dir():  # a mistyped name (data/cartpol): the datasets beside it that look most like it
        from canter.errors import closest

        base = checkpoint_base(path)
        near = closest(base.name, [Path(d).name for d in _datasets_in(base.parent)]) if base.parent.is_dir() else []
        return ("did you mean " + " or ".join(f"'{base.parent / n}'" for n in near) + "?" if near
                else "write one with canter collect")
    if (folder / "checkpoints").is_dir() or (folder / "config.yaml").is_file():
        return (f"'{path}' is a run directory: write a dataset from its policy with canter collect "
                f"{shlex.quote(str(path))} --out PATH")  # quoted for the shell (a path with a space)
    found = _datasets_in(folder)
    if not found:
        return f"'{path}' is a directory holding no dataset; write one with canter collect"
    return f"'{path}' is a directory; its datasets: {', '.join(found[:5])}{', ...' if len(found) > 5 else ''}"


def _datasets_in(folder: Path) -> list[str]:
    """The datasets (``FOLDER/NAME``) among the first 200 JSON files of ``folder``."""
    found = []
    for meta in sorted(folder.glob("*.json"))[:200]:
        try:
            if json.loads(meta.read_text()).get("kind") == KIND and meta.with_suffix(".safetensors").exists():
                found.append(str(folder / meta.stem))
        except (OSError, ValueError, AttributeError):  # unreadable, not JSON, or not a JSON object
            continue
    return found


def read_dataset_metadata(path: str | Path) -> dict[str, Any]:
    """A dataset's JSON metadata (its tensors are not read); a clear error if ``path`` is not a dataset.
    For ``minari:ID``: the env id and its ``env_kwargs`` only."""
    if str(path).startswith(MINARI_PREFIX):
        spec = _minari_spec(_load_minari(str(path)[len(MINARI_PREFIX):]))
        return {"kind": KIND, "env": str(spec.id), "env_kwargs": _spec_kwargs(spec)}
    if not str(path).strip():  # Path('') is '.', which has no name to add .json to
        raise CanterError(f"--dataset needs a dataset path, got '{path}' (write one with canter collect RUN_DIR --out PATH)")
    if Path(path).name in ("", ".."):  # '.', '/', '..': a directory, and no dataset name (Path.with_name failed)
        raise CanterError(f"dataset not found: {_missing_dataset_hint(path)}")
    base = checkpoint_base(path)
    if dataset_missing(path):
        raise CanterError(f"dataset not found: '{path}' (expected {base}.safetensors and {base}.json; "
                          f"{_missing_dataset_hint(path)})")
    tensors = base.with_name(base.name + ".safetensors")
    if not tensors.exists():  # only its JSON is there: a half-copied or moved dataset
        raise CanterError(f"dataset tensors not found: {tensors} (its {base.name}.json is there; copy the "
                          f".safetensors file beside it, or write the dataset again with canter collect)")
    meta = read_metadata(base, "dataset")
    if meta.get("kind") != KIND:
        raise CanterError(not_dataset_problem(path, meta))
    problem = metadata_problem(meta)  # the JSON is not under the tensors' sha256: edited, or another tool's
    if problem is not None:
        raise CanterError(f"dataset {base} is corrupt: {problem}")
    return meta


def check_dataset_agent(agent: Any, what: str) -> None:
    """Refuse an agent whose experience a dataset cannot hold: several policies (a multi-agent run
    with ``policies: type | agent``), or a centralised critic's observations (``central_state``)."""
    from canter.agents.multi import MultiPolicyAgent

    if isinstance(agent, MultiPolicyAgent):
        raise CanterError(f"{what} trained several policies ({', '.join(agent.policies)}); a dataset holds the "
                          f"transitions of one policy")
    if getattr(getattr(agent, "run_config", None), "central_state", False):
        raise CanterError(f"{what} trained a centralised critic on observations extended with the global state "
                          f"(central_state); a dataset holds the env's own observations")
    if hasattr(agent, "begin_episodes"):
        raise CanterError(f"{what} is a recurrent policy, whose actions depend on its memory of the episode; "
                          f"canter collect runs feed-forward policies")
    if getattr(getattr(agent, "algorithm", None), "joint_agents", False):
        raise CanterError(f"{what} acts for all agents at once on joint observations (policies: joint, as QMIX); "
                          f"a dataset holds one agent's transitions")


def collect(
    env_id: str, transitions: int, agent: Any = None, *, epsilon: float = 0.0, seed: int = 0,
    env_kwargs: dict[str, Any] | None = None, info: dict[str, Any] | None = None,
) -> TransitionDataset:
    """Run ``agent``'s deterministic policy (random actions without an agent, :func:`~canter.envs.random_actions.random_env_actions`) for
    ``transitions`` transitions, each action replaced by a random one with probability ``epsilon``.

    One env runs, so each episode's transitions are stored in order. On a multi-agent env (one row
    per agent) the transitions are stored agent by agent, whole episodes only (collection goes on
    until there are ``transitions`` of them); only the dataset's last episode may be cut short, as
    on a single-agent env. It runs without the training wrappers (Atari: the true game score, no
    episodic life). Truncated episodes keep their real final observation as ``next_obs``. The
    random actions draw from their own generator, not the env's (both seeded from ``seed``).
    """
    from canter.envs import make_vec_env

    if agent is not None:
        check_dataset_agent(agent, "the agent")
    from canter.tools.checks import check_collect_settings

    check_collect_settings(transitions, epsilon, seed)
    from canter.envs.multiagent import trained_policies

    with trained_policies(multi_policy=False):  # one shared policy acts (or random actions): no --set policies
        env = make_vec_env(env_id, 1, "sync", env_kwargs)
    try:
        obs_space, act_space = env.single_observation_space, env.single_action_space
        if agent is not None:  # a policy of another env acted there: an env traceback, or actions stored wrongly
            from canter.envs.spaces import check_agent_spaces

            check_agent_spaces(agent, env_id, obs_space, act_space)
        rng = stream_rng(seed, "dataset")  # not default_rng(seed): that is the env's own stream
        slots = env.num_envs  # a multi-agent env's agents
        obs_shape, act_shape = tuple(obs_space.shape or ()), tuple(act_space.shape or ())
        columns = GrowingColumns({  # as many rows as transitions for one agent; several agents grow it
            "obs": (obs_shape, obs_space.dtype), "actions": (act_shape, act_space.dtype), "rewards": ((), np.float32),
            "next_obs": (obs_shape, obs_space.dtype), "terminated": ((), bool), "truncated": ((), bool),
            "slot": ((), np.int64)}, transitions if slots == 1 else 2 * transitions, f"collecting {env_id}")
        obs = env.reset(seed=seed)
        count, whole, steps = 0, 0, 0
        open_rows = np.zeros(slots, np.int64)  # per agent: transitions of its unfinished episode
        # several agents: whole episodes are needed (each agent's last one is unfinished); a bound on the
        # steps, for an env whose episodes never end
        while count < transitions if slots == 1 else whole < transitions:
            steps += 1
            if slots > 1 and steps > 100 * transitions:
                raise CanterError(f"{env_id}: its agents finished only {whole} transitions' worth of whole episodes "
                                  f"in {steps - 1} steps; collect stores whole episodes of a multi-agent env")
            if agent is None:
                actions = random_env_actions(act_space, env.num_envs, rng, obs, obs_space)
            else:
                actions = agent.predict(obs)
            if agent is not None and epsilon > 0:
                explore = rng.random(env.num_envs) < epsilon
                actions = np.where(explore.reshape(-1, *[1] * (actions.ndim - 1)),
                                   random_env_actions(act_space, env.num_envs, rng, obs, obs_space), actions)
            step = env.step(actions)
            rows = np.flatnonzero(step.valid)  # reset-only steps carry no transition
            # a time-limit end that did not terminate (SB3's TimeLimit.truncated), as from_replay reads a replay buffer
            truncated = np.asarray(step.truncated, bool) & ~np.asarray(step.terminated, bool)
            columns.add(slot=rows, **{name: np.asarray(values)[rows] for name, values in (
                ("obs", obs), ("actions", actions), ("rewards", step.reward), ("next_obs", step.obs),
                ("terminated", step.terminated), ("truncated", truncated))})
            count += len(rows)
            open_rows[rows] += 1
            ended = rows[(np.asarray(step.terminated) | np.asarray(step.truncated))[rows]]
            whole += int(open_rows[ended].sum())
            open_rows[ended] = 0
            obs = step.obs
    finally:
        env.close()
    stacked = columns.arrays()
    if slots > 1:  # agent by agent, whole episodes first; cut at ``transitions`` like one agent's stream
        slot = stacked.pop("slot")
        done = stacked["terminated"] | stacked["truncated"]
        keep = [np.flatnonzero(slot == a) for a in range(slots)]
        keep = [idx[: np.flatnonzero(done[idx])[-1] + 1] if done[idx].any() else idx[:0] for idx in keep]
        order = np.concatenate(keep)
        stacked = {k: v[order] for k, v in stacked.items()}
    stacked.pop("slot", None)
    arrays = {k: v[:transitions] for k, v in stacked.items()}  # in the spaces' dtypes already
    policy = {"policy": "random"} if agent is None else {"policy": "agent", "epsilon": epsilon}
    from canter.envs.turns import absolute_opponents

    # a run's opponent snapshots, where it played them, are not part of the env's id; an opponent run given by a
    # relative path is recorded absolute, as a run's config records it (an offline run elsewhere did not find it)
    recorded = absolute_opponents(env_id, {k: v for k, v in (env_kwargs or {}).items() if k != SNAPSHOTS_KEY})
    data = TransitionDataset(**arrays, env_id=env_id, observation_space=obs_space, action_space=act_space,
                             info={**policy, "seed": seed, **(info or {})}, env_kwargs=recorded)
    returns = data.episode_returns()
    data.info.update(episodes=len(returns), mean_return=float(returns.mean()) if len(returns) else None)
    return data


from canter.data.dataset_replay import from_replay  # noqa: E402,F401  (re-exported; it uses TransitionDataset)
