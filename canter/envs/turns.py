"""Turn-based PettingZoo games (the AEC API) as single-agent envs: one learner against opponents.

``--env pettingzoo:MODULE`` where ``MODULE`` has PettingZoo's AEC ``env()`` factory and no
``parallel_env()`` (the classic board and card games: ``pettingzoo.classic.tictactoe_v3``,
``connect_four_v3``, ...) gives :class:`TurnBasedEnv`: the learner plays one seat, and every
other seat's moves are made inside ``step`` until it is the learner's turn again (or its game is
over). A transition is the learner's observation at its turn, its move, and the reward it gathered
until its next turn (PettingZoo's cumulative reward, which ``last()`` reports), so wins and losses
that an opponent's move decides reach the move that allowed them. Observations with an
``action_mask`` (every classic game) train with masks (:mod:`canter.envs.masks`), and so does a game that
reports the mover's mask in ``info["action_mask"]`` (PettingZoo's AEC API allows either): its observations
become ``{"observation", "action_mask"}`` dicts, so the mask is packed with each observation and the
learner acts and learns under it (before 2026-11-27 only the random opponent read such a mask).

Two ``env_kwargs`` are the adapter's own; the rest go to ``env()``:

- ``opponent``: ``random`` (default: uniform over the legal moves), ``self`` (the learning policy's
  sampled moves, :meth:`~canter.agents.Agent.explore`, as it learns; training envs only, in this
  process: evaluation, ``canter eval`` and ``play`` then meet a random opponent, since a policy
  against itself scores about 0 by symmetry), or a canter run directory or checkpoint (its trained
  policy's sampled moves, loaded once per env copy; a run plays the copy it made when it started,
  :mod:`canter.envs.opponents`). A deterministic opponent would play one
  line a learner can memorise; sampled moves keep it varied. A list of these is a pool: each
  game draws its opponent from it (``[self, random, runs/old]``);
- ``seat``: ``random`` (default: drawn at every reset, so the learner plays every side) or an
  agent name (``player_1``).

Every seat must observe and act in the same spaces (with a random seat or a policy opponent).
"""
from __future__ import annotations

import importlib
from typing import Any, Callable

import gymnasium as gym
import numpy as np
import torch

from canter.envs.masks import MASK_KEY, OBS_KEY, allowed_actions, has_action_mask, mask_size
from canter.envs.opponents import SNAPSHOTS_KEY
from canter.envs.packing import ObservationPacker, needs_packing
from canter.envs.random_actions import allowed_choice
from canter.envs.spaces import action_nvec
from canter.errors import CanterError, bad_env_kwargs, closest, keyword_hint, unknown
from canter.registry import import_failure

PREFIX = "pettingzoo:"
OPPONENTS = ("random", "self")
#: games in a row that may end before the learner's first move before reset gives up
MAX_UNPLAYED_GAMES = 1000


def aec_factory(env_id: str) -> Callable[..., Any] | None:
    """The AEC ``env()`` factory of ``pettingzoo:MODULE`` when the module has no ``parallel_env()``, else None."""
    if not env_id.startswith(PREFIX):
        return None
    try:
        module = importlib.import_module(env_id[len(PREFIX):])
    except ImportError:
        return None  # parallel_factory names the missing module (or PettingZoo's extra)
    except (Exception, SystemExit) as exc:  # the module itself fails: a ValueError, a SyntaxError at import...
        raise import_failure(env_id[len(PREFIX):], f" for env '{env_id}'", exc) from None
    if callable(getattr(module, "parallel_env", None)) or not callable(getattr(module, "env", None)):
        return None
    return module.env


def is_turn_based(env_id: str) -> bool:
    """Whether ``env_id`` names a turn-based (AEC-only) PettingZoo game."""
    return aec_factory(env_id) is not None


def split_kwargs(env_kwargs: dict[str, Any] | None) -> tuple[list[str], str, dict[str, Any]]:
    """``(opponents, seat, the game's own kwargs)`` from a turn-based run's ``env_kwargs`` (``opponent``
    is one spec or a list of them)."""
    kwargs = dict(env_kwargs or {})
    opponent, seat = kwargs.pop("opponent", "random"), str(kwargs.pop("seat", "random"))
    opponents = [str(o) for o in opponent] if isinstance(opponent, (list, tuple)) else [str(opponent)]
    if not opponents:
        raise CanterError("env_kwargs opponent is an empty list: name at least one (random, self or a run directory)")
    return opponents, seat, kwargs


def absolute_opponents(env_id: str, env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """``env_kwargs`` of a turn-based game with its opponents' run directories and checkpoints made
    absolute, so that the run's recorded config finds them from any working directory (``canter eval``,
    ``play``, ``train --resume``); other envs' kwargs, and specs that name no existing path, unchanged."""
    if "opponent" not in env_kwargs or not is_turn_based(env_id):
        return env_kwargs
    opponent = env_kwargs["opponent"]

    def absolute(spec: Any) -> Any:
        from pathlib import Path

        if not isinstance(spec, str) or spec in OPPONENTS or not _names_checkpoint(spec):
            return spec
        return str(Path(spec).absolute())

    opponent = [absolute(o) for o in opponent] if isinstance(opponent, (list, tuple)) else absolute(opponent)
    return {**env_kwargs, "opponent": opponent}


def refuse_snapshots_key(env_id: str, given: str, env_kwargs: dict[str, Any]) -> None:
    """Refuse :data:`~canter.envs.opponents.SNAPSHOTS_KEY` in a turn-based run's ``env_kwargs`` / ``eval_env_kwargs``
    (``given``): canter sets it when it makes a run's envs; the run's ``opponent`` paths are what to give."""
    if SNAPSHOTS_KEY in env_kwargs and is_turn_based(env_id):
        raise CanterError(f"{given} {SNAPSHOTS_KEY} is canter's own (a run's copies of its opponents, set when its envs "
                          f"are made): drop it and name the opponents with 'opponent'")


def opponent_ids(env_id: str, env_kwargs: dict[str, Any] | None) -> dict[str, str]:
    """Each run directory or checkpoint among a turn-based game's opponents -> the ``checkpoint_id`` of the
    checkpoint it loads as now (a run's ``best``, else its ``last``): a run trained further since has saved another.
    One that ``env_kwargs`` plays from a snapshot (:data:`~canter.envs.opponents.SNAPSHOTS_KEY`): the id of the
    checkpoint the snapshot copied, which never changes. Empty for other envs and opponents."""
    if not env_kwargs or "opponent" not in env_kwargs or not is_turn_based(env_id):
        return {}
    from canter.checkpoint import find_checkpoint, read_metadata

    files = env_kwargs.get(SNAPSHOTS_KEY) or {}
    return {spec: str(read_metadata(files[spec])["snapshot_of"]["checkpoint_id"] if spec in files else
                      read_metadata(find_checkpoint(spec)).get("checkpoint_id"))
            for spec in split_kwargs(env_kwargs)[0] if spec not in OPPONENTS}


class _Pool:
    """The opponents' policies, one per ``opponent`` spec: None for uniform legal moves, else a function
    of a batch of packed observations and a torch generator to draw from
    (:meth:`canter.agents.Agent.explore`), loaded from the spec's snapshot in ``files`` where it has one (the
    run's copy, :mod:`canter.envs.opponents`), else from the spec's path. Code, not state: an env snapshot skips it."""

    resume_stateless = True

    def __init__(self, specs: list[str], observation_space: gym.Space, action_space: gym.Space,
                 files: dict[str, str] | None = None) -> None:
        self.specs = specs
        files = files or {}
        self.policies: list[Callable[[np.ndarray, torch.Generator], Any] | None] = [
            None if spec in OPPONENTS else _checkpoint_policy(spec, observation_space, action_space, files.get(spec))
            for spec in specs]


class TurnBasedEnv(gym.Env):
    """One seat of a turn-based PettingZoo game; the other seats move inside :meth:`step` (module docstring)."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any] | None = None, training: bool = False,
                 render_mode: str | None = None) -> None:
        factory = aec_factory(env_id)
        if factory is None:
            raise CanterError(f"'{env_id}' is not a turn-based PettingZoo game (a module with env() and no parallel_env())")
        kwargs = dict(env_kwargs or {})
        files = kwargs.pop(SNAPSHOTS_KEY, None)  # the run's copies of its frozen opponents (canter.envs.opponents)
        opponents, seat, kwargs = split_kwargs(kwargs)
        try:
            self.game = factory(render_mode=render_mode, **kwargs) if render_mode else factory(**kwargs)
        except TypeError as exc:  # a misspelled argument: answered with the closest one
            raise CanterError(f"bad env_kwargs for '{env_id}': {exc}{keyword_hint(factory, exc)}") from None
        except ImportError as exc:  # a game that imports its backend when made (hanabi: open_spiel via shimmy)
            raise CanterError(f"env '{env_id}' is missing a dependency: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - a bad env_kwargs value
            raise bad_env_kwargs(env_id, kwargs, exc) from None
        self.render_mode = render_mode
        self.metadata = dict(getattr(self.game, "metadata", {}))  # render modes and fps, for videos
        agents = list(self.game.possible_agents)
        if seat != "random":  # the player named so: a seat is text (--seat 1) and players may be integers
            named = [agent for agent in agents if str(agent) == seat]
            if not named:
                raise unknown("seat", seat, ["random", *map(str, agents)])
            seat = named[0]
        self.seat_choice, self.agents = seat, agents
        seats = agents if seat == "random" else [seat]
        others = agents if opponents != ["random"] else seats
        obs_space, act_space = self.game.observation_space(seats[0]), self.game.action_space(seats[0])
        for agent in others:
            if self.game.observation_space(agent) != obs_space or self.game.action_space(agent) != act_space:
                raise CanterError(f"the seats of '{env_id}' observe or act differently ({seats[0]}: {obs_space}, "
                                  f"{act_space}; {agent}: {self.game.observation_space(agent)}, "
                                  f"{self.game.action_space(agent)}): pick one with env_kwargs seat, against "
                                  f"opponent: random")
        #: the game reports its masks in info, not in its observations: they are moved into the observations
        self._info_mask = not has_action_mask(obs_space) and self._masks_in_info()
        if self._info_mask:
            obs_space = gym.spaces.Dict({OBS_KEY: obs_space, MASK_KEY: gym.spaces.MultiBinary(mask_size(act_space))})
        self.observation_space, self.action_space = obs_space, act_space
        self._pack = ObservationPacker(obs_space, act_space) if needs_packing(obs_space) else None
        if not training:  # module docstring: outside training a policy meets a random opponent, not itself
            opponents = ["random" if spec == "self" else spec for spec in opponents]
        self._pool = _Pool(opponents, self._pack.space if self._pack is not None else obs_space, act_space, files)
        self.current = 0  # the index of this game's opponent in the pool (drawn at reset)
        self.learner = seats[0]

    def _masks_in_info(self) -> bool:
        """Whether the game's first mover finds its action mask in ``info`` (a game reset to look)."""
        try:
            self.game.reset()
            return bool(self.game.agents) and MASK_KEY in (self.game.last()[4] or {})
        except Exception:  # noqa: BLE001 - a game that cannot reset unseeded: reset() will say so
            return False

    def _observation(self, obs: Any, info: dict[str, Any]) -> Any:
        """``obs`` with the mask from ``info`` where the game reports it there (none: allows nothing, as a
        finished game's last observation; :func:`~canter.envs.masks.allowed_actions` then unmasks it)."""
        if not self._info_mask:
            return obs
        mask = info.get(MASK_KEY)
        mask = np.zeros(self.observation_space[MASK_KEY].n, np.int8) if mask is None else np.asarray(mask, np.int8)
        return {OBS_KEY: obs, MASK_KEY: mask}

    @property
    def opponent(self) -> str:
        """This game's opponent spec."""
        return self._pool.specs[self.current]

    @property
    def policy(self) -> Callable[[np.ndarray, torch.Generator], Any] | None:
        """This game's opponent policy (None: uniform legal moves, or ``self`` not bound yet)."""
        return self._pool.policies[self.current]

    def bind_policy(self, policy: Callable[[np.ndarray, torch.Generator], Any]) -> None:
        """Give the ``self`` opponents their policy (see :class:`_Pool`)."""
        for i, spec in enumerate(self._pool.specs):
            if spec == "self":
                self._pool.policies[i] = policy

    # -- the game ------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """A new game; opponents move until the learner's first turn. A game that the opponents end before
        that turn (a resignation, a fold, the other seats' win) holds no move of the learner's: the next
        game is played instead."""
        super().reset(seed=seed)
        self.game.reset(seed=None if seed is None else int(seed))
        for _ in range(MAX_UNPLAYED_GAMES):
            if self.seat_choice == "random":
                self.learner = self.agents[int(self.np_random.integers(len(self.agents)))]
            if len(self._pool.specs) > 1:
                self.current = int(self.np_random.integers(len(self._pool.specs)))
            obs, _, terminated, truncated, info = self._until_learner()
            if not (terminated or truncated):
                return obs, {**info, "seat": self.learner, "opponent": self.opponent}
            self.game.reset()  # the game's own generator goes on (seeded above)
        raise CanterError(f"{MAX_UNPLAYED_GAMES} games in a row ended before seat {self.learner} moved: it never "
                          f"gets a turn against this opponent (env_kwargs seat, opponent)")

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """The learner's move, then the others' until its next turn (or its game's end)."""
        self.game.step(int(action) if np.ndim(action) == 0 else action)
        return self._until_learner()

    def _until_learner(self) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        game = self.game
        while game.agents:
            agent = game.agent_selection
            obs, reward, terminated, truncated, info = game.last()
            if agent == self.learner:
                return self._observation(obs, info), float(reward), bool(terminated), bool(truncated), dict(info)
            game.step(None if terminated or truncated else self._opponent_move(agent, obs, info))
        # the learner left the game unseen (every agent was removed at once, with no step of its own to report its
        # end): its episode is over, with what it gathered since its move (it was read as 0.0, a win or loss lost)
        return self._observation(game.observe(self.learner), {}), *_final_outcome(game, self.learner), {}

    def _opponent_move(self, agent: str, obs: Any, info: dict[str, Any]) -> Any:
        if self.policy is None:
            if self.opponent == "self":
                raise CanterError("opponent: self has no policy yet: bind_opponents(env, agent) gives it one")
            mask = obs.get(MASK_KEY) if isinstance(obs, dict) else info.get(MASK_KEY)
            if mask is None:  # a uniform move, drawn through this env's generator (saved with the env)
                space = self.game.action_space(agent)
                space.seed(int(self.np_random.integers(2**31)))
                return space.sample()
            space = self.game.action_space(agent)
            if isinstance(space, gym.spaces.Discrete):  # a mask that allows nothing: any move, as the learner's side
                return int(self.np_random.choice(np.flatnonzero(allowed_actions(np.asarray(mask)[None])[0])))
            # MultiDiscrete / MultiBinary: each sub-action among its allowed choices
            return allowed_choice(allowed_actions(np.asarray(mask)[None], action_nvec(space)), self.np_random, space)[0]
        obs = self._observation(obs, info)
        x = self._pack(obs) if self._pack is not None else np.asarray(obs, dtype=np.float32)
        # the opponent's draws come from this env's generator (saved with the env), not the learner's
        generator = torch.Generator().manual_seed(int(self.np_random.integers(2**62)))
        return np.asarray(self.policy(x[None], generator))[0]

    def render(self) -> Any:  # noqa: D102
        return self.game.render()

    def close(self) -> None:  # noqa: D102
        self.game.close()


def _final_outcome(game: Any, agent: str) -> tuple[float, bool, bool]:
    """``(reward, terminated, truncated)`` of ``agent`` in an AEC ``game`` that removed it without a last turn:
    the reward ``last()`` would have reported (PettingZoo's ``_cumulative_rewards``, else ``rewards``), and
    truncated where the game says so of ``agent`` (else terminated)."""
    for source in (game, getattr(game, "unwrapped", game)):
        try:
            cumulative = source._cumulative_rewards
        except AttributeError:  # a wrapper that hides private attributes
            continue
        if agent in (cumulative or {}):
            reward = cumulative[agent]
            break
    else:
        reward = (getattr(game, "rewards", None) or {}).get(agent, 0.0)
    truncated = bool((getattr(game, "truncations", None) or {}).get(agent, False))
    terminated = bool((getattr(game, "terminations", None) or {}).get(agent, False)) or not truncated
    return float(reward), terminated, truncated and not terminated


def _names_checkpoint(path: str) -> bool:
    """Whether ``path`` is an existing file or directory, or a checkpoint named by its base
    (``runs/x/checkpoints/best``, as :func:`canter.load` and ``canter eval`` take it)."""
    from pathlib import Path

    from canter.checkpoint import checkpoint_base

    base = checkpoint_base(path)
    return Path(path).exists() or any(base.with_name(base.name + ext).exists() for ext in (".json", ".safetensors"))


def check_opponent_path(path: str) -> None:
    """Refuse an opponent spec that names no run directory or checkpoint (nor ``random`` or ``self``)."""
    if not _names_checkpoint(path):
        from canter.run_dirs import closest_run_dirs

        near = [*closest(path, OPPONENTS), *closest_run_dirs(path)][:3]  # 'rando', a mistyped run directory
        hint = "; did you mean " + " or ".join(f"'{n}'" for n in near) + "?" if near else ""
        raise CanterError(f"opponent '{path}' is neither {' nor '.join(OPPONENTS)} nor a canter run directory or "
                          f"checkpoint{hint}")


def _checkpoint_policy(path: str, observation_space: gym.Space, action_space: gym.Space,
                       snapshot: str | None = None) -> Callable[..., Any]:
    """The exploring (sampled) policy of a canter run directory or checkpoint trained on these spaces (loaded from
    ``snapshot``, the run's copy of it, where given)."""
    from canter.envs.spaces import spaces_mismatch

    if snapshot is None:
        check_opponent_path(path)
    from canter.api import load

    agent = load(snapshot or path)
    _check_memoryless(agent)
    mismatch = spaces_mismatch((agent.observation_space, agent.action_space), (observation_space, action_space))
    if mismatch:
        raise CanterError(f"opponent '{path}' does not fit this game: {mismatch.replace('env has', 'the game has')}")
    return agent.explore


def _check_memoryless(agent: Any) -> None:
    if hasattr(agent, "begin_episodes"):
        raise CanterError("a recurrent policy cannot play the opponent seats of a turn-based game (its memory "
                          "would follow every game at once)")


def with_opponent(env_id: str, env_kwargs: dict[str, Any], opponent: str | None, seat: str | None) -> dict[str, Any]:
    """``env_kwargs`` with the ``opponent`` / ``seat`` given (``canter eval --opponent --seat``); a
    one-line error for an env that is not a turn-based game."""
    if opponent is None and seat is None:
        return env_kwargs
    if not is_turn_based(env_id):
        raise CanterError(f"--opponent and --seat are for turn-based PettingZoo games; '{env_id}' is not one")
    if opponent is not None and "self" in split_kwargs({"opponent": opponent})[0]:
        raise CanterError("--opponent self: a policy against itself scores about 0 by symmetry, which says nothing; "
                          "name a run directory or checkpoint (this run's earlier one, say) or random")
    given = {"opponent": opponent, "seat": seat}
    return {**env_kwargs, **{k: v for k, v in given.items() if v is not None}}


def check_given_opponent(env_id: str, env_kwargs: dict[str, Any] | None, given: str = "--env-kwargs") -> None:
    """Refuse ``opponent: self`` in ``--env-kwargs`` given to ``canter eval`` / ``play`` / ``collect`` (and in
    ``env_kwargs`` given to ``canter.evaluate``, ``given`` naming it): outside training a ``self`` opponent is a
    random one (module docstring), which would answer another question than the one asked, silently
    (``--opponent self`` is refused the same way by :func:`with_opponent`)."""
    if not env_kwargs or "opponent" not in env_kwargs or not is_turn_based(env_id):
        return
    if "self" in split_kwargs({"opponent": env_kwargs["opponent"]})[0]:
        raise CanterError(f"{given} opponent: self plays only in training (here it would be a random opponent), "
                          "and a policy against itself scores about 0 by symmetry; name a run directory or "
                          "checkpoint (this run's earlier one, say) or random")


def bind_opponents(env: Any, agent: Any, env_id: str, env_kwargs: dict[str, Any] | None) -> None:
    """With ``opponent: self``, give the turn-based training envs of ``env`` (a :class:`~canter.envs.VecEnv`)
    the learning ``agent``'s exploring policy, :meth:`~canter.agents.Agent.explore` (a no-op for other runs)."""
    if not is_turn_based(env_id) or "self" not in split_kwargs(env_kwargs)[0]:
        return
    subs = getattr(getattr(env, "env", None), "envs", None)
    if subs is None:
        raise CanterError("opponent: self plays the learning policy in this process: use --vectorization sync")
    _check_memoryless(agent)
    for sub in subs:
        sub.get_wrapper_attr("bind_policy")(agent.explore)
