"""Make single and vectorised environments from a Gymnasium id or a canter-registered factory."""
from __future__ import annotations

import re
from typing import Any

import gymnasium as gym

from canter.envs import atari, multiagent, multiagent_views, turns
from canter.envs.id_hints import bare_module_hint, entry_point_given, ids_hint, module_given
from canter.envs.opponents import with_snapshots
from canter.envs.packing import needs_packing, pack_observations
from canter.envs.vector import VecEnv, autoreset_mode
from canter.envs.workers import vector_env
from canter.errors import (ENV_PACKAGES, CanterError, CanterWarning, warn, bad_env_kwargs, closest, keyword_hint,
                           missing_env_package, raised_by_the_call, raised_in, unknown)
from canter.registry import _REGISTRY, defining_module, import_user_module

_EXTRA_FOR_NAMESPACE = {"ALE": "atari"}
_EXTRA_FOR_ENTRY = {"box2d": ("box2d", "Box2D"), "mujoco": ("mujoco", "mujoco")}


def check_env_id(env_id: str) -> None:
    """Raise a CanterError (with close matches) unless ``env_id`` names a known environment."""
    if env_id in _REGISTRY["env"]:
        return
    if env_id != env_id.strip():  # ' CartPole-v1' read as an unknown id whose quotes hid the space
        raise CanterError(f"env id '{env_id}' has a space before or after it; write '{env_id.strip()}'")
    if multiagent.is_multiagent(env_id):
        if not turns.is_turn_based(env_id):
            multiagent.parallel_factory(env_id)
        return
    module = None
    if ":" in env_id:
        missing = missing_env_package(env_id.split(":", 1)[0], env_id)  # gymnasium_robotics: pip install its package
        if missing is not None:
            raise missing
        module = import_user_module(env_id.split(":", 1)[0], f" for env '{env_id}'")
        env_id = env_id.split(":", 1)[1]
    if env_id in gym.registry or env_id in _REGISTRY["env"]:  # the module may register either kind
        return
    if module is not None and not env_id:  # 'my_pkg.envs:' with the id left out: the module's ids, not a typo's
        raise CanterError(f"env '{module.__name__}:' names no env id after the colon; {ids_hint(module, env_id)}")
    if module is not None and env_id.isidentifier() and callable(getattr(module, env_id, None)):
        raise entry_point_given(module, env_id)
    if atari.looks_like_atari(env_id) and not atari.register_ale():
        raise atari.missing_extra(env_id)
    if env_id in gym.registry:
        return
    namespace = env_id.split("/", 1)[0] if "/" in env_id else None
    if namespace in _EXTRA_FOR_NAMESPACE and not any(i.startswith(namespace + "/") for i in gym.registry):
        # the namespace has no ids at all: its package is missing (else the id is a typo, answered below)
        extra = _EXTRA_FOR_NAMESPACE[namespace]
        raise CanterError(f"env '{env_id}' needs the '{extra}' extra: pip install 'canter[{extra}]'")
    ale = atari.register_ale()  # ale-py's ids are close matches too ('ALE-Pong-v5' is 'ALE/Pong-v5'); False without it
    if module is not None:  # the module was imported: the id is a typo (hinting at 'module:Id' repeats the input)
        raise CanterError(f"unknown env id '{env_id}' after importing module '{module.__name__}'; "
                          f"{ids_hint(module, env_id)}")
    retired = atari.retired_id_hint(env_id) if ale else None  # PongDeterministic-v4: 'Tennis-v4' was the hint
    if retired:
        raise CanterError(f"unknown env id '{env_id}': {retired}")
    given = module_given(env_id)  # --env mtx, a module imported already that registers envs: its ids (no import)
    if given is not None:
        raise given
    err = unknown("env id", env_id, list(gym.registry) + list(_REGISTRY["env"]),
                  see="gymnasium.pprint_registry() lists Gymnasium's, 'canter list' canter's own")
    hint = bare_module_hint(env_id)  # a module of that name: not imported, only 'module:ID' imports
    if not ale and re.fullmatch(r"[A-Z][A-Za-z]*(-ram)?-v[04]", env_id):  # ale-py's Pong-v4, Breakout-ram-v0
        hint = "; an Atari game's id needs the 'atari' extra: pip install 'canter[atari]'"
    if re.fullmatch(r"Fetch[A-Za-z]+-v\d+", env_id):  # gymnasium-robotics' FetchReach-v4: its module registers it
        hint = (f"; gymnasium-robotics' env: --env gymnasium_robotics:{env_id} (pip install "
                f"{ENV_PACKAGES['gymnasium_robotics']})")
    raise CanterError(f"{err} (an env of your own is found when a module the run imports registers it: "
                      f"--env my_pkg.envs:{env_id}, or 'imports: [my_pkg.envs]'){hint}")


def registered_in_main(env_id: str) -> bool:
    """Whether ``env_id`` (an id without ``module:``) is registered from ``__main__`` (a script, a notebook): by
    ``canter.register`` or ``gymnasium.register`` of a factory, class or entry-point string of ``__main__``, which
    another process (``canter eval``, ``--resume``) does not run, so that it does not know the id."""
    if ":" in env_id:
        return False  # 'module:Id': later commands import the module again
    factory = _REGISTRY["env"].get(env_id)
    if factory is None:
        spec = gym.registry.get(env_id)
        factory = None if spec is None else spec.entry_point
    if isinstance(factory, str):
        return factory.split(":", 1)[0] == "__main__"
    return defining_module(factory) == "__main__"  # a functools.partial: its function's ('functools' was not)


#: env ids :func:`warn_env_of_main` has warned about in this process
_MAIN_ENVS_WARNED: set[str] = set()


def warn_env_of_main(env_id: str) -> None:
    """Warn once per env id that a run directory's env is registered in ``__main__`` (:func:`registered_in_main`):
    the run trains, but ``canter eval``, ``canter play`` and ``--resume`` of it would stop at 'unknown env id'."""
    if env_id in _MAIN_ENVS_WARNED or not registered_in_main(env_id):
        return
    _MAIN_ENVS_WARNED.add(env_id)
    warn(CanterWarning(
        f"env '{env_id}' is registered in __main__ (this script or notebook): canter eval, canter play and --resume "
        f"of this run will not find it; register it in an importable module and pass env 'module:{env_id}' "
        f"(or list the module in imports)"))


def _gym_id(env_id: str) -> str:
    return env_id.split(":", 1)[1] if ":" in env_id else env_id


def given_image_layout(env_id: str) -> str | None:
    """The layout in which ``env_id``'s envs give their image observations whatever their shape
    (:func:`canter.models.cnn.mark_image_layout`): ``"chw"`` for an Atari id, whose frame stacks
    (:func:`canter.envs.atari.make_atari_vec`) are channels-first at every size; None for other envs (read by shape)."""
    if turns.is_turn_based(env_id) or multiagent.is_multiagent(env_id):
        return None
    return atari.STACK_LAYOUT if atari.is_atari(_gym_id(env_id)) else None


def same_env_id(a: str, b: str) -> bool:
    """Whether two env ids name one env: equal, or ``module:EnvId`` and ``EnvId`` (the module only says what to
    import to register it; a ``pettingzoo:`` prefix is part of the id)."""
    if a == b:
        return True
    return not (multiagent.is_multiagent(a) or multiagent.is_multiagent(b)) and _gym_id(a) == _gym_id(b)


def registered_factory(env_id: str) -> Any:
    """The canter-registered factory ``env_id`` names (``name``, or ``module:name`` once
    :func:`check_env_id` imported the module), or None (the one lookup of it: :mod:`canter.errors` asks here too)."""
    return _REGISTRY["env"].get(env_id) or _REGISTRY["env"].get(_gym_id(env_id))


def _factory_name(factory: Any) -> str:
    """``module.qualname`` of a canter-registered factory, for messages."""
    return f"{getattr(factory, '__module__', '?')}.{getattr(factory, '__qualname__', type(factory).__name__)}"


def _factory_own_error(factory: Any, env_id: str, kwargs: dict[str, Any], exc: BaseException,
                       render_mode: str | None = None) -> CanterError | None:
    """The one-line error for a TypeError that a canter-registered factory's own code raised (a bug of its own, or a
    value of ``kwargs`` its code cannot take), naming the factory and where it raised it; None for any other error
    and for a call the factory (or what it passes ``kwargs`` on to) refuses: a key it does not take, whose message
    (``bad env_kwargs``, ``cannot make env``) hints at the closest key. It was "cannot make env" or "bad env_kwargs"
    with the error's text alone, as if the env_kwargs were at fault. ``render_mode``: the one it was also given."""
    if not isinstance(exc, TypeError) or isinstance(exc, CanterError) or raised_by_the_call(exc):
        return None
    refused = re.search(r"unexpected keyword argument '([^']+)'", str(exc))
    if refused is not None and (refused.group(1) in kwargs or render_mode is not None and refused.group(1) ==
                                "render_mode"):  # passed on with **kwargs to a class that refuses it
        return None
    given = ", ".join(([f"render_mode={render_mode!r}"] if render_mode is not None else [])
                      + ([f"env_kwargs {kwargs}"] if kwargs else []))
    given = f" ({given})" if given else ""
    return CanterError(f"env '{env_id}': its registered factory {_factory_name(factory)} raised {raised_in(exc)}"
                       f"{given}")


def _render_mode_refused(factory: Any, env_id: str, render_mode: str, exc: TypeError) -> CanterError:
    """The error for a canter-registered factory's env that cannot render: the factory refused ``render_mode``, or
    (one that takes it, ``**kwargs`` say) the env it passed it on to did, whose constructor must take it; the latter
    was told to take render_mode in the factory, which it did."""
    import inspect

    try:
        takes = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # no signature to read: the factory's own refusal, as before
        takes = {}
    passes = "render_mode" in takes or any(p.kind is p.VAR_KEYWORD for p in takes.values())
    what = (f"the env its registered factory {_factory_name(factory)} makes" if passes
            else f"its registered factory {_factory_name(factory)}")
    fix = ("its constructor must take render_mode, as gymnasium's envs do" if passes
           else "take render_mode=None in the factory and give it to the env it makes")
    return CanterError(f"'{env_id}' cannot render: {what} refused render_mode={render_mode!r}, which --render, "
                       f"--video-dir and --record-every pass ({exc}); {fix}")


def _factory_env(factory: Any, env_id: str, **kwargs: Any) -> gym.Env:
    """``factory(**kwargs)``: the env a canter-registered factory makes. Anything else it returns (None, from a factory
    that forgot its ``return``) is a one-line :class:`CanterError`; it was an AttributeError traceback from the
    wrappers ('NoneType' object has no attribute 'observation_space')."""
    env = factory(**kwargs)
    if not isinstance(env, gym.Env):
        raise CanterError(f"env '{env_id}': its registered factory {_factory_name(factory)} returned {type(env).__name__}, not a "
                          f"gymnasium.Env (it must return the env it makes)")
    return env


def make_env(env_id: str, render_mode: str | None = None, **kwargs: Any) -> gym.Env:
    """Create one environment (used for rendering and video)."""
    check_env_id(env_id)
    if turns.is_turn_based(env_id):
        # a game without a move limit: a play episode ends after EVAL_EPISODE_CAP moves of the learner's
        return pack_observations(_capped_env(turns.TurnBasedEnv(env_id, kwargs, render_mode=render_mode), False))
    if multiagent.is_multiagent(env_id):
        raise CanterError(f"'{env_id}' is a multi-agent env: it has no single-agent env to record during training "
                          f"(--record-every); watch or record a trained run with canter play RUN_DIR")
    factory = registered_factory(env_id)
    if factory is not None:  # render_mode only when asked: training made the env without it
        try:
            env = _factory_env(factory, env_id, **kwargs) if render_mode is None else _factory_env(
                factory, env_id, render_mode=render_mode, **kwargs)
        except TypeError as exc:
            own = _factory_own_error(factory, env_id, kwargs, exc, render_mode)
            if own is not None:
                raise own from None
            if render_mode is not None and "render_mode" not in kwargs and re.search(
                    r"unexpected keyword argument 'render_mode'", str(exc)):
                raise _render_mode_refused(factory, env_id, render_mode, exc) from None
            given = f"render_mode={render_mode!r}, " if render_mode is not None else ""
            raise CanterError(f"cannot make env '{env_id}' ({given}env_kwargs {kwargs}): {exc}"
                              f"{keyword_hint(factory, exc)}") from None
        except Exception as exc:  # noqa: BLE001 - a bad env_kwargs value: any error of the env's constructor
            raise bad_env_kwargs(env_id, kwargs, exc) from None
        return pack_observations(_capped_env(env, False))
    if atari.is_atari(_gym_id(env_id)):
        _time_limit(kwargs)  # agent steps (atari.make_atari_env)
        return atari.make_atari_env(_gym_id(env_id), training=False, render_mode=render_mode, env_kwargs=kwargs)
    _time_limit(kwargs, training=False)  # canter play / --record-every: 2e1 or 20.0 was gymnasium's TypeError traceback
    # render_mode only when asked, as training and evaluation make the env: gymnasium passes render_mode=None on to
    # the constructor, and an env whose __init__ takes no render_mode trained and evaluated but failed canter play
    spec = _capped(gym.spec(_gym_id(env_id)), False)
    try:
        return pack_observations(gym.make(spec, **({} if render_mode is None else {"render_mode": render_mode}), **kwargs))
    except (gym.error.DependencyNotInstalled, ImportError) as exc:
        raise _missing_dependency(env_id, exc) from None
    except TypeError as exc:
        if render_mode is not None:
            try:  # made without render_mode, the env is fine: its constructor takes none (else the error is another's)
                gym.make(spec, **kwargs).close()
            except Exception:  # noqa: BLE001 - the first error, a bad env_kwargs say, is the one to report
                pass
            else:
                raise CanterError(f"'{env_id}' cannot render: its constructor takes no render_mode argument, which "
                                  f"--render, --video-dir and --record-every pass (render_mode={render_mode!r}), as "
                                  f"gymnasium's envs take it") from None
        raise bad_env_kwargs(env_id, kwargs, exc) from None  # canter.play.play's env_kwargs: a misspelled key
    except Exception as exc:  # noqa: BLE001 - a bad env_kwargs value (FrozenLake's map_name: 9x9 is a KeyError)
        raise bad_env_kwargs(env_id, kwargs, exc) from None


def _time_limit(kwargs: dict[str, Any], training: bool = True) -> Any:
    """``kwargs``' ``max_episode_steps`` (None if absent), a whole float (``1e3`` or ``200.0`` in YAML) made an int
    in ``kwargs``; a CanterError for anything but a whole number >= 1 or -1 (gymnasium's: no time limit). An env
    that is not ``training`` gets :data:`EVAL_EPISODE_CAP` in ``kwargs`` for -1, as an env registered without a
    time limit does (:func:`_capped`): an evaluation episode of a policy that never fails would never end. A None
    (``max_episode_steps: null``) is dropped from ``kwargs``: the env's own limit, as ``gymnasium.make`` takes it
    (gymnasium's native vector envs compared their step counts with the None: a TypeError traceback at the first step)."""
    if "max_episode_steps" in kwargs and kwargs["max_episode_steps"] is None:
        del kwargs["max_episode_steps"]
    limit = kwargs.get("max_episode_steps")
    if isinstance(limit, float) and limit.is_integer():  # 1e3 or 200.0 in YAML: a whole number, as the error says
        limit = kwargs["max_episode_steps"] = int(limit)
    if limit is not None and limit != -1 and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise CanterError(f"env_kwargs max_episode_steps must be a whole number >= 1, or -1 for no time limit "
                          f"(gymnasium's), got {limit!r}")
    if limit == -1 and not training:
        limit = kwargs["max_episode_steps"] = EVAL_EPISODE_CAP
    return limit


def _missing_dependency(env_id: str, exc: Exception) -> CanterError:
    entry = str(getattr(gym.spec(_gym_id(env_id)), "entry_point", ""))
    if isinstance(exc, ImportError) and not isinstance(exc, ModuleNotFoundError):  # Hopper-v3: gone from gymnasium
        detail = " ".join(str(exc).split()).rstrip(".")
        return CanterError(f"env '{env_id}' cannot be made: {detail}{_newest(env_id)}")
    for key, (extra, _) in _EXTRA_FOR_ENTRY.items():
        if key in entry:
            return CanterError(f"env '{env_id}' needs the '{extra}' extra: pip install 'canter[{extra}]'")
    if isinstance(exc, ModuleNotFoundError) and exc.name:  # an import of the env's module failed (phys2d/*: jax)
        gid = _gym_id(env_id)
        near = closest(gid.split("/", 1)[1], [i for i in gym.registry if "/" not in i], 1) if "/" in gid else []
        other = f", or use '{near[0]}' (gymnasium's env of that name without it)" if near else ""
        return CanterError(f"env '{env_id}' is missing a dependency: {exc}: pip install {exc.name.split('.')[0]}"
                           f"{other}")
    return CanterError(f"env '{env_id}' is missing a dependency: {exc}")


def _newest(env_id: str) -> str:
    """'; use 'Hopper-v5'': the newest version gymnasium registers of ``env_id``'s name when ``env_id`` is older,
    with the extra its entry point needs; '' when there is none."""
    from gymnasium.envs.registration import find_highest_version, parse_env_id

    namespace, name, version = parse_env_id(_gym_id(env_id))
    newest = find_highest_version(namespace, name)
    if version is None or newest is None or newest <= version:
        return ""
    newer = f"{namespace + '/' if namespace else ''}{name}-v{newest}"
    entry = str(gym.spec(newer).entry_point)
    extra = next((f" (the '{e}' extra: pip install 'canter[{e}]')" for k, (e, _) in _EXTRA_FOR_ENTRY.items()
                  if k in entry), "")
    return f"; use '{newer}'{extra}"


#: ``vectorization: auto`` uses an env's native vectorised implementation from this many copies on
NATIVE_MIN_ENVS = 4
#: steps after which an evaluation (or play) episode of an env registered without a time limit
#: (``CliffWalking-v1``), or whose env_kwargs remove it (``max_episode_steps: -1``), is truncated: a
#: deterministic policy that loops (or never fails) would never end it
EVAL_EPISODE_CAP = 10_000


def _capped(spec: Any, training: bool) -> Any:
    """``spec``, or for an env that is not training and has no time limit a copy truncated at
    :data:`EVAL_EPISODE_CAP` steps (training episodes keep the env's own ending)."""
    if training or spec.max_episode_steps is not None:
        return spec
    import dataclasses

    return dataclasses.replace(spec, max_episode_steps=EVAL_EPISODE_CAP)


def _capped_env(env: gym.Env, training: bool) -> gym.Env:
    """A canter-registered factory's ``env``, or for one that is not training and has no ``TimeLimit``
    wrapper the env truncated at :data:`EVAL_EPISODE_CAP` steps (as :func:`_capped` does for Gymnasium ids)."""
    if training:
        return env
    inner: Any = env
    while isinstance(inner, gym.Wrapper):
        if isinstance(inner, gym.wrappers.TimeLimit):
            return env
        inner = inner.env
    return gym.wrappers.TimeLimit(env, EVAL_EPISODE_CAP)


def inherited_vectorization(vectorization: str, env_id: str, env_kwargs: dict[str, Any] | None) -> str:
    """``vectorization``, a run's own, for an env made with it where the user cannot choose one (``canter eval``
    has no ``--vectorization``): ``auto`` in place of ``native`` where the native env cannot take ``env_kwargs``
    (an Atari game's ``mode``, which only the wrapper path takes; ``auto`` picks that path for it)."""
    if vectorization == "native" and atari.is_atari(_gym_id(env_id)) and not atari.native_takes(env_kwargs):
        return "auto"
    return vectorization


def run_vectorization(run: Any, env_id: str, env_kwargs: dict[str, Any] | None) -> str:
    """The vectorization to build ``env_id`` with for a run's agent where the user cannot choose one (``canter
    eval``, ``canter play``, ``--record-every``): the run's own (``run``: its ``RunConfig``, or None for an agent
    without one) for the run's env, else ``auto``; passed through :func:`inherited_vectorization`."""
    own = run is not None and env_id == run.env
    return inherited_vectorization(run.vectorization if own else "auto", env_id, env_kwargs)


def make_vec_env(
    env_id: str, n_envs: int, vectorization: str = "auto", env_kwargs: dict[str, Any] | None = None,
    training: bool = False, policies: str = "shared", central_state: bool = False,
) -> VecEnv | multiagent_views.MultiPolicyVecEnv:
    """Create ``n_envs`` copies of ``env_id`` behind a :class:`VecEnv`, which names ``env_id`` in its errors and
    warnings (see :func:`_make_vec_env`)."""
    env = _make_vec_env(env_id, n_envs, vectorization, env_kwargs, training, policies, central_state)
    env.env_id = env_id
    return env


def _make_vec_env(
    env_id: str, n_envs: int, vectorization: str, env_kwargs: dict[str, Any] | None,
    training: bool, policies: str, central_state: bool,
) -> VecEnv | multiagent_views.MultiPolicyVecEnv:
    """Create ``n_envs`` copies of ``env_id`` behind a :class:`VecEnv`.

    ``vectorization``: ``native`` uses the env's own vectorised implementation, ``sync`` steps
    copies in this process, ``async`` in subprocesses (for expensive envs), and ``auto`` picks
    native when the env has one and ``n_envs >= NATIVE_MIN_ENVS`` (Atari: ale-py's always), else
    sync. Below that, stepping the copies one by one costs less than a native version's per-call
    array overhead (CartPole-v1, 1 env: 17 µs per sync step vs 39 µs native; equal at 4 envs).
    Autoreset is always gymnasium's ``NEXT_STEP`` mode. ``Dict`` and ``Tuple`` observations, those that
    carry an action mask (``{"observation", "action_mask"}``) included, are flattened into one vector
    per copy (:mod:`canter.envs.packing`).
    ``training`` marks envs that collect training data: for Atari they add episodic life and
    reward clipping (:mod:`canter.envs.atari`); evaluation envs report the raw score.
    ``policies`` (multi-agent ``pettingzoo:`` envs): ``shared`` makes every agent of every copy a
    sub-env; ``type`` / ``agent`` give a :class:`~canter.envs.multiagent_views.MultiPolicyVecEnv`; ``joint``
    makes each copy one sub-env acting for all its agents (:class:`~canter.envs.multiagent_views.JointParallelEnv`).
    ``central_state``: each agent's observation also carries the global state and its index, for
    a centralised critic (:class:`~canter.envs.multiagent.ParallelVectorEnv`). A turn-based
    (AEC-only) PettingZoo game gives one learner's seat per copy (:mod:`canter.envs.turns`).
    """
    check_env_id(env_id)
    kwargs = dict(env_kwargs or {})
    if turns.is_turn_based(env_id):  # one learner's seat per copy; the other seats move inside step()
        if policies != "shared" or central_state:
            given = " and ".join(([f"policies: {policies}"] if policies != "shared" else [])
                                 + (["central_state"] if central_state else []))
            raise CanterError(f"'{env_id}' is a turn-based game: one policy learns a seat against opponents "
                              f"(env_kwargs opponent, seat); drop {given}")
        if vectorization == "native":
            raise CanterError(f"'{env_id}' is a turn-based game, with no native vectorised implementation; "
                              f"use --vectorization sync (or async)")
        # evaluation: a game without a move limit ends after EVAL_EPISODE_CAP moves of the learner's (truncated)
        return VecEnv(vector_env(lambda: pack_observations(_capped_env(turns.TurnBasedEnv(env_id, kwargs, training),
                                                                       training)),
                                 n_envs, vectorization == "async", env_id))
    if multiagent.is_multiagent(env_id):  # every agent of every copy is a sub-env, stepped in this process
        if vectorization in ("async", "native"):
            raise CanterError(f"'{env_id}' is a parallel multi-agent env, whose copies are stepped in this "
                              f"process: vectorization '{vectorization}' does not apply; use sync (or auto)")
        cap = None if training else EVAL_EPISODE_CAP  # an env without a time limit: evaluation episodes end
        if policies == "joint":
            return VecEnv(multiagent_views.JointParallelEnv(env_id, n_envs, kwargs, max_steps=cap))
        env = multiagent.ParallelVectorEnv(env_id, n_envs, kwargs, policies, central_state, max_steps=cap)
        return VecEnv(env) if policies == "shared" else multiagent_views.MultiPolicyVecEnv(env)
    if atari.is_atari(_gym_id(env_id)):
        _time_limit(kwargs)  # agent steps on the wrapper path, which auto picks for it (atari.make_atari_env)
        env = atari.make_atari_vec(_gym_id(env_id), n_envs, vectorization, training, kwargs)
        return VecEnv(env, check_actions=True, whole_games=training)  # statistics per game, not per life
    factory = registered_factory(env_id)
    if factory is not None:
        if vectorization == "native":
            raise CanterError(f"env '{env_id}' has no native vectorised implementation; use --vectorization sync")
        try:
            return VecEnv(vector_env(lambda: pack_observations(_capped_env(_factory_env(factory, env_id, **kwargs),
                                                                           training)), n_envs,
                                     vectorization == "async", env_id))
        except Exception as exc:  # noqa: BLE001 - a misspelled env_kwargs key or a bad value, as for a Gymnasium id below
            # the factory's own TypeError with env_kwargs given (without: its traceback, as a Gymnasium id's)
            raise (kwargs and _factory_own_error(factory, env_id, kwargs, exc)) or bad_env_kwargs(
                env_id, kwargs, exc) from None
    gid = _gym_id(env_id)
    spec = gym.spec(gid)
    limit = _time_limit(kwargs, training)
    # gymnasium's native vector envs take the limit as is: 0 and -1 truncated every episode after one step
    has_native = spec.vector_entry_point is not None and limit != -1
    if vectorization == "native" and not has_native:
        what = ("'s native vectorised implementation cannot run without a time limit (max_episode_steps -1)"
                if limit == -1 else " has no native vectorised implementation")
        raise CanterError(f"env '{env_id}'{what}; use --vectorization sync")
    try:
        if has_native and (vectorization == "native" or (vectorization == "auto" and n_envs >= NATIVE_MIN_ENVS)):
            env = gym.make_vec(gid, num_envs=n_envs, vectorization_mode="vector_entry_point", **kwargs)
            mode = autoreset_mode(env) or gym.vector.AutoresetMode.NEXT_STEP  # (the value "NextStep" too)
            next_step = mode == gym.vector.AutoresetMode.NEXT_STEP
            if next_step and not needs_packing(env.single_observation_space):
                return VecEnv(env)
            space = env.single_observation_space
            env.close()  # structured observations are flattened per copy (canter.envs.packing)
            if not next_step and vectorization == "native":  # auto: copies in NEXT_STEP mode, below
                raise CanterError(f"env '{env_id}': its native vectorised implementation autoresets in "
                                  f"{getattr(mode, 'name', mode)} mode, and canter's trainers take NEXT_STEP "
                                  f"(docs/architecture.md section 3); use --vectorization sync or async, whose "
                                  f"copies autoreset in NEXT_STEP mode")
            if vectorization == "native":  # auto: copies whose observations are flattened, below
                from canter.envs.spaces import describe_space

                raise CanterError(f"env '{env_id}': its native vectorised implementation returns structured "
                                  f"observations ({describe_space(space)}), which canter flattens in each env copy; "
                                  f"use --vectorization sync or async")
        if vectorization == "async":  # canter's own copies, so that a worker's error is one line (canter.envs.workers)
            spec = _capped(spec, training)
            env = vector_env(lambda: pack_observations(gym.make(spec, **kwargs)), n_envs, True, env_id)
        else:
            env = gym.make_vec(
                _capped(spec, training), num_envs=n_envs, vectorization_mode="sync",
                vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}, wrappers=[pack_observations],
                **kwargs,
            )
    except (gym.error.DependencyNotInstalled, ImportError) as exc:  # jax for phys2d/*, Hopper-v3: tracebacks
        raise _missing_dependency(env_id, exc) from None
    except Exception as exc:  # noqa: BLE001 - a misspelled key (hinted) or a bad value (FrozenLake map_name 9x9: KeyError)
        raise bad_env_kwargs(env_id, kwargs, exc) from None
    return VecEnv(env)


def eval_env_kwargs(run: Any) -> dict[str, Any]:
    """The keyword arguments of a run's evaluation env: its ``env_kwargs`` with its ``eval_env_kwargs`` merged over
    them (a key of the latter wins; a run saved before the key existed has none)."""
    return {**(run.env_kwargs or {}), **(getattr(run, "eval_env_kwargs", None) or {})}


def make_eval_env(run: Any, n_envs: int, spaces: tuple[Any, Any] | None = None,
                  snapshots: dict[str, str] | None = None) -> VecEnv | multiagent_views.MultiPolicyVecEnv:
    """``n_envs`` copies of a run's evaluation env (its evaluations in training, an offline run's too): ``run.env``
    with :func:`eval_env_kwargs`, on the run's vectorization as ``canter eval`` picks it
    (:func:`inherited_vectorization`). Where the run has ``eval_env_kwargs``, an error making the env names them,
    and an env whose (observation, action) spaces differ from ``spaces`` (the training env's) is refused. A turn-based
    game plays the run's frozen opponents from their ``snapshots`` (spec -> path, :mod:`canter.envs.opponents`)."""
    given = getattr(run, "eval_env_kwargs", None) or {}
    turns.check_given_opponent(run.env, given, "eval_env_kwargs")  # an evaluation's 'self' would be a random one
    kwargs = with_snapshots(eval_env_kwargs(run), snapshots or {})
    try:
        env = make_vec_env(run.env, n_envs, inherited_vectorization(run.vectorization, run.env, kwargs), kwargs,
                           policies=run.policies, central_state=run.central_state)
    except CanterError as exc:
        if not given:
            raise
        raise CanterError(f"eval_env_kwargs {given}: {exc}") from None
    if given and spaces is not None:
        from canter.envs.spaces import spaces_mismatch

        mismatch = spaces_mismatch(spaces, (env.single_observation_space, env.single_action_space),
                                   "the training env has", "the evaluation env")
        if mismatch:
            env.close()
            raise CanterError(f"eval_env_kwargs {given} change the env's spaces, which the policy cannot act in: "
                              f"{mismatch}")
    return env
