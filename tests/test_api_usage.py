"""The Python API as a Stable-Baselines3 user would call it: training, loading, continuing, saving and evaluating
(predict on one observation from a plain gymnasium env: test_api_predict_one_obs.py)."""
import gymnasium as gym
import numpy as np
import pytest
import torch

import canter
from canter.errors import CanterError
from support import untrained_agent as _agent

# the agents here are built by short trainers that never train: their budget warnings say nothing
pytestmark = pytest.mark.filterwarnings("ignore:.*(less than one (rollout|training phase)|never learns).*")


def test_load_leaves_the_callers_global_random_states(tmp_path):
    import random

    canter.train("ppo", "CartPole-v1", seed=0, max_steps=64, n_envs=1, n_steps=64, batch_size=64, eval_episodes=1,
                 run_dir=tmp_path / "run")
    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    random.seed(123), np.random.seed(123), torch.manual_seed(123)
    want = random.random(), np.random.rand(), torch.rand(1).item()
    random.seed(123), np.random.seed(123), torch.manual_seed(123)
    agent = canter.load(tmp_path / "run")
    got = random.random(), np.random.rand(), torch.rand(1).item()
    random.setstate(states[0]), np.random.set_state(states[1]), torch.set_rng_state(states[2])
    assert got == want
    assert np.shape(agent.predict(np.zeros(4, np.float32))) == ()
    assert agent.run_dir == tmp_path / "run"  # train's agent has it too; a loaded one had no such attribute
    # the run's checkpoints/ folder: was "is not a canter run directory (no config.yaml or checkpoints/)"
    assert canter.load(tmp_path / "run" / "checkpoints").metadata["step"] == agent.metadata["step"]


def _records(trainer, stop_after=None):
    out = []
    for record in trainer():
        out.append((record.step, record.iteration, record.rolling_return, sorted(record.losses.items()),
                    len(record.episodes), record.stop_reason))
        if stop_after is not None and len(out) == stop_after:
            break
    return out


def test_calling_the_trainer_again_continues_where_it_stopped(tiny_ppo):
    whole = canter.make_trainer("ppo", "CartPole-v1", seed=1, **tiny_ppo)
    want = _records(whole)
    whole.close()
    assert want[-1][-1] == "max_steps"
    trainer = canter.make_trainer("ppo", "CartPole-v1", seed=1, **tiny_ppo)
    first = _records(trainer, stop_after=2)
    wall = trainer.wall_time()
    rest = _records(trainer)  # the same episodes, rollout buffer and counters: not a fresh start
    assert first + rest == want
    assert trainer.wall_time() >= wall
    assert _records(trainer) == []  # finished: no iteration past max_steps
    assert trainer.step == tiny_ppo["max_steps"]
    trainer.run.max_steps += 128  # a larger budget continues it
    more = _records(trainer)
    assert more[-1][0] == tiny_ppo["max_steps"] + 128 and more[-1][-1] == "max_steps"
    trainer.close()


def test_a_loop_over_an_earlier_call_is_refused_once_a_later_call_went_on(tiny_ppo):
    trainer = canter.make_trainer("ppo", "CartPole-v1", seed=1, **tiny_ppo)
    old = trainer()
    assert next(old).step == 128
    assert _records(trainer)[-1][-1] == "max_steps"  # a later call trains to the end of the budget
    with pytest.raises(CanterError, match="later trainer\\(\\) call"):
        next(old)  # it went on training past max_steps (640 of 512)
    assert trainer.step == tiny_ppo["max_steps"]
    trainer.close()


def test_a_trainer_without_a_run_dir_is_a_context_manager_too(tiny_ppo):
    # make_trainer returns a Run with run_dir (a context manager) and a Trainer without: both take ``with``
    with canter.make_trainer("ppo", "CartPole-v1", seed=1, **tiny_ppo) as trainer:
        for _ in trainer():
            break
    assert trainer.env.env.closed and trainer.eval_env.env.closed  # the gymnasium vector envs


def test_train_shows_progress_when_not_quiet_also_without_a_run_dir(tiny_ppo, capsys):
    canter.train("ppo", "CartPole-v1", seed=1, run_dir=None, quiet=False, **tiny_ppo)  # was silent
    assert "ppo CartPole-v1: 512/512 steps" in capsys.readouterr().err


@pytest.mark.parametrize("setting, kwargs", [("wandb", {"wandb": True}), ("record_every", {"record_every": 256}),
                                             ("wandb", {"sets": ["wandb=true"]})])
def test_wandb_or_record_every_without_a_run_dir_is_a_one_line_error(workdir, setting, kwargs, tiny_ppo):
    # they were skipped without a word: no run directory, so no loggers (make_trainer's default run_dir is None)
    for call in (lambda: canter.train("ppo", "CartPole-v1", run_dir=None, **tiny_ppo, **kwargs),
                 lambda: canter.make_trainer("ppo", "CartPole-v1", **tiny_ppo, **kwargs)):
        with pytest.raises(CanterError, match=f"'{setting}' applies to a run directory, and run_dir=None writes "
                                              f"none: drop it, or pass run_dir"):
            call()
    assert not list(workdir.iterdir())


def test_raising_run_max_seconds_continues_a_trainer_it_stopped(tiny_ppo):
    trainer = canter.make_trainer("ppo", "CartPole-v1", seed=1, **{**tiny_ppo, "max_steps": 10**6}, max_seconds=0.05)
    assert [r for r in trainer()][-1].stop_reason == "max_seconds"
    trainer.run.max_seconds = trainer.wall_time() + 0.05  # as trainer.run.max_steps is raised: it did nothing
    more = [r for r in trainer()]
    trainer.close()
    assert more and more[-1].stop_reason == "max_seconds"


def test_a_run_iterated_twice_says_how_to_continue(tiny_ppo, tmp_path):
    from canter.api import resume_trainer

    run = canter.make_trainer("ppo", "CartPole-v1", seed=1, run_dir=tmp_path / "run", **tiny_ppo)
    for i, _ in enumerate(run()):
        if i == 1:
            break
    with pytest.raises(CanterError, match="resume_trainer"):  # it crashed: 'flush of closed file'
        next(iter(run()))
    run.close()
    again = resume_trainer(tmp_path / "run")
    last = [r for r in again()][-1]
    again.close()
    assert (last.step, last.stop_reason) == (tiny_ppo["max_steps"], "max_steps")


def test_registering_the_same_definition_again_replaces_it():
    src = ("@canter.register('env', 'ApiUsageCart-v0')\n"
           "def make_cart(**kw):\n    return gym.make('CartPole-v1', **kw)\n")
    scope = {"canter": canter, "gym": gym, "__name__": "notebook_cell"}
    exec(src, scope)
    exec(src, scope)  # a re-run notebook cell: it raised 'already registered'
    assert canter.lookup("env", "ApiUsageCart-v0") is scope["make_cart"]
    with pytest.raises(ValueError, match="already registered"):
        canter.register("env", "ApiUsageCart-v0")(lambda **kw: None)  # another object under the name


def test_the_pause_between_calls_does_not_count_against_max_seconds(tiny_ppo, monkeypatch):
    import time

    trainer = canter.make_trainer("ppo", "CartPole-v1", seed=1, **{**tiny_ppo, "max_steps": 10**6}, max_seconds=60.0)
    first = _records(trainer, stop_after=1)
    clock = time.perf_counter()
    monkeypatch.setattr(time, "perf_counter", lambda: clock + 3600.0 + (time.monotonic() - start))
    start = time.monotonic()  # an hour's pause between the calls: not training time
    more = _records(trainer, stop_after=1)
    trainer.close()
    assert first[0][-1] is None
    assert len(more) == 1 and more[0][0] > first[0][0]  # it yielded nothing: the pause counted as training


def test_a_stop_request_ends_the_call_it_came_in_not_every_later_one(tiny_ppo):
    def request(trainer, losses):
        if trainer.step == 256:
            trainer.stop_requested = "user"

    trainer = canter.make_trainer("ppo", "CartPole-v1", seed=1, **tiny_ppo, hooks={"after_update": request})
    first = _records(trainer)
    rest = _records(trainer)
    trainer.close()
    assert [(r[0], r[-1]) for r in first] == [(128, None), (256, "user")]
    # the stale request stopped every later call after one iteration: [(384, 'user')]
    assert [(r[0], r[-1]) for r in rest] == [(384, None), (512, "max_steps")]


def test_another_lambda_of_the_same_module_under_a_taken_name_is_refused():
    first = canter.register("env", "ApiUsageLambda-v0")(lambda **kw: gym.make("CartPole-v1", **kw))
    src = "canter.register('env', 'ApiUsageLambda-v1')(lambda **kw: gym.make('CartPole-v1', **kw))\n"
    scope = {"canter": canter, "gym": gym, "__name__": "notebook_cell"}
    exec(src, scope)
    exec(src, scope)  # the same lambda's cell run again still replaces it
    with pytest.raises(ValueError, match="already registered"):  # every lambda's qualname is '<lambda>'
        canter.register("env", "ApiUsageLambda-v0")(lambda **kw: gym.make("Pendulum-v1", **kw))
    assert canter.lookup("env", "ApiUsageLambda-v0") is first


@pytest.mark.parametrize("kwargs, near", [
    ({"max_step": 100}, "did you mean 'max_steps'"),
    ({"targt_reward": 100}, "did you mean 'target_reward'"),
    ({"lrr": 0.1}, "did you mean 'lr'"),
])
def test_a_misspelled_keyword_offers_the_closest_run_key_or_hyperparameter(kwargs, near):
    """make_trainer/train take run keys and hyperparameter names; a typo of a run key was reported as an
    unknown hyperparameter ('hparams.max_step'; did you mean 'hparams.n_steps'...), never the run key."""
    with pytest.raises(CanterError, match=near):
        canter.make_trainer("ppo", "CartPole-v1", **kwargs)


def test_sets_takes_one_key_value_string_too():
    trainer = canter.make_trainer("ppo", "CartPole-v1", max_steps=64, sets="lr=0.0123")  # was "got 'l'"
    trainer.close()
    assert trainer.config.lr == 0.0123


@pytest.mark.parametrize("kwargs,needle", [(dict(hparams="lr"), "hparams must be a dict"),
                                            (dict(hparams=3), "hparams must be a dict"),
                                            (dict(run_dir=123), "run_dir must be a path"),
                                            (dict(config_file=3), "config_file must be a path")])
def test_arguments_of_the_wrong_type_are_one_line_errors(kwargs, needle):
    # were raw Python errors: "dictionary update sequence element #0 has length 1", "'int' object
    # is not iterable", "expected str, bytes or os.PathLike object, not int"
    with pytest.raises(CanterError, match=needle):
        canter.make_trainer("ppo", "CartPole-v1", max_steps=64, **kwargs)


@pytest.mark.parametrize("call", [lambda: canter.load(None), lambda: canter.load(123), lambda: canter.resume(None)])
def test_load_and_resume_of_something_that_is_not_a_path_are_one_line_errors(call):
    with pytest.raises(CanterError, match=r"\(a str or pathlib.Path\), got"):  # were "TypeError: expected str, ..."
        call()


def test_keyword_hyperparameters_still_override_the_hparams_mapping():
    """By design (kept by 8485335, which routed keywords to run keys or hyperparameters): a keyword hyperparameter
    overrides the same name in hparams=, as a flag overrides a file; README's config composition says so."""
    trainer = canter.make_trainer("ppo", "CartPole-v1", hparams={"lr": 1e-2, "n_epochs": 3}, lr=2e-3, max_steps=64)
    assert (trainer.config.lr, trainer.config.n_epochs, trainer.run.max_steps) == (2e-3, 3, 64)
    trainer.close()


def test_a_loop_left_with_break_can_still_save_a_named_checkpoint(tiny_ppo, tmp_path):
    """``for r in run(): break`` closes the run's loggers as the generator goes away; ``run.save(name)``
    afterwards crashed in the TensorBoard logger's checkpoint hook with 'ValueError: flush of closed file'."""
    run = canter.make_trainer("ppo", "CartPole-v1", seed=1, run_dir=tmp_path / "run", **tiny_ppo)
    for record in run():
        if record.step >= 256:
            break
    path = run.save("mine")
    run.close()
    agent = canter.load(path)
    obs = np.zeros((3, 4), np.float32)
    assert agent.metadata["step"] == 256 and (agent.predict(obs) == run.agent.predict(obs)).all()


def test_saving_a_named_checkpoint_as_last_is_refused_and_the_run_still_resumes(tiny_ppo, tmp_path):
    """``run.save("last")`` wrote an agent-only checkpoint over the resumable one: resuming then failed with
    'checkpoints/last is not a resumable checkpoint'."""
    run = canter.make_trainer("ppo", "CartPole-v1", seed=1, run_dir=tmp_path / "run", **tiny_ppo)
    for record in run():
        if record.step >= 256:
            break
    with pytest.raises(CanterError, match="is the run's resumable checkpoint"):
        run.save("last")
    run.close()
    resumed = canter.api.resume_trainer(tmp_path / "run")
    assert [r.step for r in resumed()][-1] == tiny_ppo["max_steps"]
    resumed.close()


def test_run_save_takes_a_plain_checkpoint_name(tiny_ppo, tmp_path):
    """``run.save("../x")`` wrote a checkpoint outside the run's checkpoints folder."""
    run = canter.make_trainer("ppo", "CartPole-v1", seed=1, run_dir=tmp_path / "run", **tiny_ppo)
    for name in ("../x", "", "a/b", ".."):
        with pytest.raises(CanterError, match="a plain file name"):
            run.save(name)
    run.close()
    assert not (tmp_path / "run" / "x.json").exists()


def test_an_agent_saves_as_sb3s_model_save_and_loads_again(tmp_path):
    """An agent trained without a run directory (``run_dir=None``) could not be kept: there was no ``save`` (SB3's
    ``model.save(path)``). It now writes path.safetensors + path.json, which canter.load reads; a directory and a
    run's resumable last are refused."""
    agent = canter.train("dqn", "CartPole-v1", run_dir=None, max_steps=256, learning_starts=64, eval_episodes=1)
    assert agent.save(tmp_path / "models" / "dqn") == tmp_path / "models" / "dqn"
    loaded = canter.load(tmp_path / "models" / "dqn")
    obs = np.random.default_rng(0).normal(size=(20, 4)).astype(np.float32)
    np.testing.assert_array_equal(loaded.predict(obs), agent.predict(obs))
    assert loaded.metadata["step"] == agent.metadata["step"] and loaded.run_dir is None
    assert canter.load(tmp_path / "models" / "dqn", weights_only=False).algorithm.updates == agent.algorithm.updates
    with pytest.raises(CanterError, match="is a directory; an agent is saved as a file pair"):
        agent.save(tmp_path / "models")
    (tmp_path / "last.json").write_text('{"resumable": true}')
    with pytest.raises(CanterError, match="is a run's resumable checkpoint"):
        agent.save(tmp_path / "last")
    assert (tmp_path / "last.json").read_text() == '{"resumable": true}'


def test_a_make_trainer_loops_agent_saves_through_the_trainer(tiny_ppo, tmp_path):
    """A make_trainer loop's agent (a callback's trainer.agent, SB3's self.model) saves with the run's metadata as of
    the call. It used to be refused, and once trainer.save_agent had run, a later agent.save wrote that call's step
    and counters beside the newer weights (saved at 128 steps, then at 512: the second file said 128)."""
    with canter.make_trainer("ppo", "CartPole-v1", **tiny_ppo) as trainer:
        for record in trainer():
            if record.step == 128:
                trainer.save_agent(tmp_path / "early")
        trainer.agent.save(tmp_path / "agent")
        assert canter.evaluate(trainer.agent, episodes=1).episodes == 1  # SB3's evaluate_policy(self.model)
    assert canter.load(tmp_path / "early").metadata["step"] == 128
    assert canter.load(tmp_path / "agent").metadata["step"] == trainer.step == 512
    with canter.make_trainer("ppo", "CartPole-v1", run_dir=tmp_path / "run", **tiny_ppo) as run:
        for _ in run():
            pass
        run.save_agent(tmp_path / "from_run")  # a Run's agent: its run directory kept
        assert run.trainer.agent.run_dir == run.dir
    assert canter.load(tmp_path / "from_run").metadata["config"]["algo"] == "ppo"
    from canter.agents.agent import Agent

    bare = canter.load(tmp_path / "agent")
    bare.metadata = None
    with pytest.raises(CanterError, match="carries no run metadata"):
        Agent.save(bare, tmp_path / "bare")


def test_a_resumed_runs_callback_saves_the_agent(tiny_ppo, tmp_path):
    """trainer.save_agent in a hook of a resumed run raised AttributeError ('OnPolicyTrainer' object has no attribute
    'resolved_config'): only make_trainer set it, and a resumed Run's trainer is built without make_trainer."""
    canter.train("ppo", "CartPole-v1", run_dir=tmp_path / "run", **tiny_ppo)
    saved = []

    def on_evaluate(trainer, result):
        saved.append(trainer.step)
        trainer.save_agent(tmp_path / "via_trainer")
        trainer.agent.save(tmp_path / "via_agent")

    canter.resume(tmp_path / "run", max_steps=640, hooks={"on_evaluate": on_evaluate})
    assert saved == [640]
    for name in ("via_trainer", "via_agent"):
        assert canter.load(tmp_path / name).metadata["step"] == 640


def test_evaluate_runs_the_runs_env_as_canter_eval_does(tmp_path, capsys):
    """There was no public evaluation (Stable-Baselines3's evaluate_policy): only canter eval or internals."""
    import json

    from canter.cli import main

    run = tmp_path / "run"
    agent = canter.train("ppo", env="CartPole-v1", env_kwargs={"max_episode_steps": 7}, max_steps=256, n_envs=2,
                         n_steps=64, batch_size=64, target_reward=None, run_dir=run, quiet=True, eval_episodes=2)
    result = canter.evaluate(agent, episodes=3, seed=5)
    assert result.episodes == 3 and result.lengths == [7, 7, 7]  # the run's env_kwargs: its 7-step limit
    assert main(["eval", str(run), "--episodes", "3", "--seed", "5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["returns"] == result.returns  # the same episodes
    assert canter.evaluate(canter.load(run), episodes=3, seed=5).returns == result.returns
    assert canter.evaluate(agent, env_kwargs={"max_episode_steps": 3}, episodes=2).lengths == [3, 3]
    assert max(canter.evaluate(agent, env="CartPole-v0", episodes=3).lengths) > 7  # another id: its own limit
    with pytest.raises(CanterError, match="episodes must be a whole number >= 1, got 0"):
        canter.evaluate(agent, episodes=0)
    with pytest.raises(CanterError, match="evaluate takes an agent that canter.train, canter.load or canter.make_agent returned"):
        canter.evaluate(object())


def test_agent_learn_given_a_step_count_names_what_trains_an_agent(tiny_ppo):
    """A loaded agent's learn(total_timesteps=N) (SB3's model.learn) was a TypeError, and learn(1000)
    "'int' object has no attribute 'obs'" from inside the algorithm."""
    agent = canter.train("ppo", "CartPole-v1", run_dir=None, **{**tiny_ppo, "max_steps": 128})
    for call in (lambda: agent.learn(total_timesteps=1000), lambda: agent.learn(1000)):
        with pytest.raises(CanterError, match=r"^agent\.learn\(batch\) is one update .*model\.learn\(total_timesteps=N\) "
                                              r"is canter\.train\(ALGO, env=ID, max_steps=N\) \(init_from=PATH"):
            call()


def test_canter_errors_are_caught_through_the_top_level_package():
    """``except canter.CanterError`` (the error every one-line refusal raises) works without knowing the
    ``canter.errors`` module; it was an AttributeError."""
    import canter
    from canter.errors import CanterError, CanterWarning

    assert canter.CanterError is CanterError and canter.CanterWarning is CanterWarning
    with pytest.raises(canter.CanterError, match="unknown algorithm 'ppoo'"):
        canter.make_trainer("ppoo", "CartPole-v1", run_dir=None)


def test_a_run_dir_trainer_reads_and_stops_as_one_without(tiny_ppo, tmp_path):
    """make_trainer(..., run_dir=...) returns a Run: trainer.step / episode_count / run were AttributeErrors there,
    and trainer.stop_requested = reason, set on the Run, was never read (the run went on to max_steps)."""
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=tmp_path / "run", **{**tiny_ppo, "max_steps": 2048})
    for record in run():
        if record.step >= 256:
            run.stop_requested = "enough"
    assert (run.step, record.stop_reason, run.run.max_steps) == (384, "enough", 2048)  # the iteration under way ends
    assert run.episode_count == run.trainer.episode_count > 0
    with pytest.raises(AttributeError):
        run.no_such_attribute


def test_evaluate_gives_the_returns_of_a_loop_by_hand_over_seeded_gym_envs():
    """README: copy c of min(N, eval_envs) reset with seed + c, then unseeded, playing (N + c) // C episodes."""
    agent = _agent("ppo", "Pendulum-v1", eval_envs=2)  # returns that differ with every start
    result = canter.evaluate(agent, episodes=5, seed=7)
    by_hand = []
    for c in range(2):
        env = gym.make("Pendulum-v1")
        for k in range((5 + c) // 2):
            obs, _ = env.reset(seed=7 + c) if k == 0 else env.reset()
            done, total = False, 0.0
            while not done:
                obs, reward, terminated, truncated, _ = env.step(agent.predict(obs))
                total, done = total + reward, terminated or truncated
            by_hand.append(total)
    assert sorted(result.returns) == pytest.approx(sorted(by_hand), rel=1e-9) and len(set(by_hand)) == 5


def test_a_closed_trainer_or_run_is_not_trained_again(tiny_ppo, tmp_path):
    """After trainer.close() (or its with block), trainer() stepped the closed envs: in-process ones trained on,
    an async one was gymnasium's ClosedEnvironmentError traceback; a Run closed before training wrote its run."""
    with canter.make_trainer("ppo", "CartPole-v1", **tiny_ppo) as trainer:
        list(trainer())
    trainer.run.max_steps *= 2
    with pytest.raises(CanterError, match=r"this trainer is closed .* make a new one"):
        list(trainer())
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=tmp_path / "run", **tiny_ppo)
    run.close()
    with pytest.raises(CanterError, match="was closed before it trained"):
        run()
    assert not (tmp_path / "run").exists()


def test_a_loop_left_at_a_record_does_not_train_on_after_its_trainer_is_closed(tiny_ppo):
    """A loop over trainer() suspended at a record when trainer.close() (a with block's end) came went on stepping
    the closed envs when resumed (in-process ones trained on without a word); it is now a one-line error."""
    trainer = canter.make_trainer("ppo", "CartPole-v1", **{**tiny_ppo, "max_steps": 10_000})
    loop = trainer()
    first = next(loop)
    trainer.close()
    with pytest.raises(CanterError, match=r"this trainer was closed .* while this loop over trainer\(\) was left"):
        next(loop)
    assert trainer.step == first.step


def test_closing_the_trainer_at_its_last_record_ends_the_loop_as_it_would(tiny_ppo):
    """'if record.done: trainer.close()' inside the loop: the loop has nothing more to step, and ended; d9b5500's
    check of a close made while the loop waited at a record raised its CanterError there too."""
    trainer = canter.make_trainer("ppo", "CartPole-v1", **tiny_ppo)
    records = []
    for record in trainer():
        records.append(record)
        if record.done:
            trainer.close()
    assert records[-1].done and records[-1].stop_reason == "max_steps" and trainer.closed
