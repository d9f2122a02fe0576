"""What a trainer leaves on its agent for ``agent.save``: a weak link to itself, and the run's last metadata."""
from __future__ import annotations

import weakref
from typing import Any


class AgentMetadata:
    """A :class:`~canter.trainers.base.Trainer` part: links the trainer's agent to it (weakly: a kept agent frees
    its trainer and envs), so that ``agent.save`` writes the run's metadata as of now while the trainer lives, and
    keeps on the agent (``agent.run_metadata_snapshot``) that metadata as of the last iteration's end (or
    ``close()``), which ``agent.save`` writes once the trainer is gone."""

    agent: Any
    step: int
    _resolved_config: dict[str, Any] | None = None
    _metadata_of: tuple[dict[str, Any], dict[str, Any]] | None = None  # (config, run_metadata) worked out for it
    #: whether a trainer without a resolved config (one built by hand) resolves one from its ``run`` and algorithm
    #: (:func:`own_config`); False for a multi-policy run's member, whose run is its parent's (a member's own
    #: ``policies: type`` config saved a policy that ``canter.load`` could not read back)
    resolves_own_config: bool = True
    _own_config_tried = False

    def link_agent(self, agent: Any, run: Any) -> None:
        """Give ``agent`` what ``canter.evaluate`` and ``agent.save`` read (a callback's ``trainer.agent`` is SB3's
        ``self.model``): the run config and a weak reference to this trainer. A metadata snapshot an earlier trainer
        left on it is dropped (and ``made_config``, make_agent's): it no longer describes the agent, which this
        trainer's own snapshot will."""
        agent.run_config, agent.trainer_ref = run, weakref.ref(self)
        agent.run_metadata_snapshot = agent.made_config = None  # make_agent's config: the trainer's now tells
        agent.save_refused = None  # why an earlier trainer's run could not be saved: this trainer's now tells

    @property
    def resolved_config(self) -> dict[str, Any] | None:
        """The run's resolved config (``make_trainer`` and a :class:`~canter.run.Run` set it), for saved agents'
        metadata; setting it remembers that metadata on the agent (:meth:`remember_metadata`). A trainer built by
        hand (``OnPolicyTrainer(Agent(PPO(...)), env, eval_env, RunConfig(...))``) has its run config and its
        algorithm's: its agent's ``save`` was refused for want of run metadata. Its env is the run config's, or,
        where that was left at its default, the one the trainer trains on (:func:`trained_env`): a
        ``RunConfig()`` around a Pendulum env saved ``env: CartPole-v1``; an env that names none: none, and
        ``agent.save`` says why (``agent.save_refused``)."""
        if self._resolved_config is None and self.resolves_own_config and not self._own_config_tried:
            self._own_config_tried = True
            run = getattr(self, "run", None)
            config = own_config(run, getattr(self, "algorithm", None))
            if config is not None:
                config["env"] = trained_env(run.env, self.trained_env_id())
                if config["env"] not in (None, run.env) and self.agent.run_config is run:
                    import dataclasses

                    # canter.evaluate and canter.play of the live agent play it too (the user's RunConfig is kept)
                    self.agent.run_config = dataclasses.replace(run, env=config["env"])
                if config["env"] is None:
                    config = None
                    self.agent.save_refused = (
                        f"this agent's trainer was built with a RunConfig whose env was left at its default "
                        f"'{run.env}', around an env that names no env id: give the RunConfig the env it trains "
                        f"on (RunConfig(env=...)) to save the agent")
            self._resolved_config = config
        return self._resolved_config

    def trained_env_id(self) -> str | None:
        """The id of the env this trainer trains on: its env's (an offline trainer's: its dataset's; else its
        evaluation env's), or the Gymnasium spec's of the vector env inside; None where none names one."""
        for source in (getattr(self, "env", None), getattr(self, "dataset", None), getattr(self, "eval_env", None)):
            name = env_name(source)
            if name is not None:
                return name
        return None

    @resolved_config.setter
    def resolved_config(self, config: dict[str, Any] | None) -> None:
        self._resolved_config = config
        self.remember_metadata()

    def remember_metadata(self, strict: bool = True) -> None:
        """Keep the run's metadata as of now on the agent: the config, spaces, canter's version and commit, worked
        out once per config, with the step and counters (``state()``: cheap, refreshed at each iteration's end).
        ``strict=False`` (``close()``, which runs in ``finally`` blocks, maybe after a failure it must not hide):
        where they cannot be read, the last remembered stay."""
        config = self.resolved_config
        if config is None:
            return
        try:
            if self._metadata_of is None or self._metadata_of[0] is not config:
                from canter.run_meta import run_metadata

                self._metadata_of = (config, run_metadata(self, config))  # type: ignore[arg-type]
            self.agent.run_metadata_snapshot = {**self._metadata_of[1], "step": self.step,
                                               "trainer": self.state()}  # type: ignore[attr-defined]
        except Exception:
            if strict:
                raise


def agent_run_config(agent: Any) -> Any:
    """``agent.run_config`` (None: it has none), once a hand-built trainer training it has resolved its run's env: a
    ``RunConfig()`` left at its default env around a Pendulum env plays Pendulum-v1 (:attr:`resolved_config`)."""
    ref = getattr(agent, "trainer_ref", None)
    trainer = ref() if ref is not None else None
    if trainer is not None and trainer.agent is agent:
        trainer.resolved_config  # noqa: B018 - resolving it gives the agent the env its trainer trains on
    return getattr(agent, "run_config", None)


def own_config(run: Any, algorithm: Any) -> dict[str, Any] | None:
    """The resolved config of a trainer built by hand around ``algorithm`` with RunConfig ``run``: its run config with
    the algorithm's hyperparameters, ``algo`` naming the algorithm's class (a ``RunConfig()`` left at its default
    ``algo: ppo`` around SAC saved a checkpoint that ``canter.load`` built as PPO); None where there is none to
    write (no run, or an algorithm config that is no dataclass: training went on, and ``agent.save`` is refused)."""
    import dataclasses

    config = getattr(algorithm, "config", None)
    if run is None or not dataclasses.is_dataclass(config) or isinstance(config, type):
        return None
    from canter.config import resolved_dict

    try:
        resolved = resolved_dict(run, config)
    except Exception:  # noqa: BLE001 - a value asdict cannot copy: no metadata, as before, not a failed iteration
        return None
    resolved["algo"] = algorithm_name(type(algorithm), run.algo)
    return resolved


def algorithm_name(cls: type, given: Any) -> str:
    """The name ``canter.load`` finds algorithm class ``cls`` under: ``given`` (the run's ``algo``) where it names
    ``cls``, else the name ``cls`` is registered under, else its ``module:Class`` path."""
    from canter.registry import lookup, registered

    try:
        if isinstance(given, str) and lookup("algorithm", given) is cls:
            return given
    except Exception:  # noqa: BLE001 - a name that finds nothing (or fails to import): not this class's
        pass
    return next((name for name, obj in registered("algorithm").items() if obj is cls),
                f"{cls.__module__}:{cls.__qualname__}")


def env_name(env: Any) -> str | None:
    """The env id that ``env`` (a :class:`~canter.envs.vector.VecEnv`, a multi-policy vector env or a dataset) was
    made from: its ``env_id``, else the Gymnasium spec's of the vector env inside it (or of its first copy); None."""
    if env is None:
        return None
    name = getattr(env, "env_id", None)
    if isinstance(name, str) and name and name != "None":  # a dataset whose metadata named no env: 'None'
        return name
    inner = getattr(env, "env", None)
    spec = getattr(inner, "spec", None)
    if spec is None:
        copies = getattr(inner, "envs", None)
        spec = getattr(copies[0], "spec", None) if isinstance(copies, (list, tuple)) and copies else None
    name = getattr(spec, "id", None)
    return name if isinstance(name, str) and name else None


def trained_env(given: str, trained: str | None) -> str | None:
    """The env a hand-built trainer's run is saved with: ``given`` (its RunConfig's) where the user named one;
    where it was left at its default, ``trained`` (the id of the env it trains on), with the ``module:`` prefix that
    either of them names for one env; None where the default was left and the env names none."""
    from canter.config import RunConfig
    from canter.envs.make import same_env_id

    if given != RunConfig.__dataclass_fields__["env"].default:
        return given
    if trained is None:
        return None
    return given if same_env_id(given, trained) and ":" not in trained else trained
