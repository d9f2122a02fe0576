"""Turn-based PettingZoo games (AEC): one learner's seat, opponents moving inside step(), rewards that
an opponent's move decides, masks, random / self / checkpoint opponents, learning, refusals."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import canter
from canter.cli import main
from canter.envs import make_env, make_vec_env
from canter.envs.packing import pack_observations
from canter.envs.turns import TurnBasedEnv, with_opponent
from canter.errors import CanterError
from support import assert_train_refused

pytest.importorskip("pettingzoo")
TTT = "pettingzoo:pettingzoo.classic.tictactoe_v3"
C4 = "pettingzoo:pettingzoo.classic.connect_four_v3"


def _lowest_legal(obs: np.ndarray, generator=None) -> np.ndarray:
    """A scripted opponent: the lowest legal square of each packed observation (mask in the last 9 columns)."""
    return np.array([int(np.flatnonzero(row[-9:])[0]) for row in obs])


def _game(seat: str) -> TurnBasedEnv:
    env = TurnBasedEnv(TTT, {"opponent": "self", "seat": seat}, training=True)
    env.bind_policy(_lowest_legal)
    return env


def _board(obs: dict) -> np.ndarray:
    """Pieces on the 3x3 board seen from the observer: 1 = own, 2 = opponent's (PettingZoo's planes)."""
    planes = obs["observation"]
    return (planes[..., 0] + 2 * planes[..., 1]).T.reshape(-1)  # tictactoe's planes are column-major


def test_the_opponent_moves_first_when_the_learner_has_the_second_seat():
    env = _game("player_2")
    obs, info = env.reset(seed=0)
    assert info["seat"] == "player_2"
    assert _board(obs).tolist() == [2, 0, 0, 0, 0, 0, 0, 0, 0]  # the opponent took square 0
    assert obs["action_mask"].tolist() == [0, 1, 1, 1, 1, 1, 1, 1, 1]


def test_a_loss_decided_by_the_opponents_move_reaches_the_learners_last_move():
    env = _game("player_1")
    env.reset(seed=0)
    for square in (3, 4):  # the opponent answers 0, then 1
        obs, reward, terminated, truncated, _ = env.step(square)
        assert (reward, terminated, truncated) == (0.0, False, False)
    obs, reward, terminated, truncated, _ = env.step(8)  # the opponent completes 0-1-2
    assert (reward, terminated, truncated) == (-1.0, True, False)
    assert sorted(_board(obs).tolist()) == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_a_win_on_the_learners_own_move():
    env = _game("player_1")
    env.reset(seed=0)
    env.step(3)  # opponent: 0
    env.step(4)  # opponent: 1
    obs, reward, terminated, _, _ = env.step(5)
    assert (reward, terminated) == (1.0, True)


def test_random_seats_and_legal_random_opponents_through_the_vector_env():
    env = make_vec_env(TTT, 4, training=True)
    assert env.single_observation_space.mask_width == 9  # the action mask packed after the 18 board values
    obs = env.reset(seed=0)
    rng = np.random.default_rng(0)
    seats_moved_first = []
    results = []
    for _ in range(400):
        legal = [np.flatnonzero(m) for m in obs[:, -9:]]  # none in a finished game's last observation
        actions = np.array([rng.choice(moves) if len(moves) else 0 for moves in legal])
        step = env.step(actions)  # an illegal move would end the game with a -1 (PettingZoo's wrapper)
        seats_moved_first += [int(row[:18].sum()) for row, v in zip(step.obs, step.valid) if not v]
        results += env.finished_returns.tolist()
        obs = step.obs
    env.close()
    assert set(seats_moved_first) == {0, 1}  # new games begin with and without the opponent's first move
    results = np.array(results)
    assert len(results) > 50 and abs((results > 0).mean() - (results < 0).mean()) < 0.2  # random vs random


def test_ppo_beats_a_random_opponent(tmp_path, capsys):
    """Random play against a random opponent, seats drawn: wins 44%, loses 45% (2,000 games)."""
    run = tmp_path / "run"
    canter.train("ppo", env=TTT, seed=0, n_envs=8, max_steps=50_000, eval_every=50_000, eval_episodes=200,
                 run_dir=run, quiet=True)
    assert main(["eval", str(run), "--episodes", "200", "--json"]) == 0
    returns = np.array(json.loads(capsys.readouterr().out)["returns"])
    assert (returns > 0).mean() >= 0.85 and (returns < 0).mean() <= 0.12, returns.mean()
    assert main(["play", str(run), "--episodes", "2"]) == 0


def test_self_play_binds_the_learner_and_evaluates_against_random():
    trainer = canter.make_trainer("ppo", TTT, n_envs=2, max_steps=256, n_steps=128, batch_size=64,
                                  env_kwargs={"opponent": "self"})
    subs = [e.get_wrapper_attr("policy") for e in trainer.env.env.envs]
    assert all(p == trainer.agent.explore for p in subs)
    assert all(e.get_wrapper_attr("opponent") == "random" for e in trainer.eval_env.env.envs)
    for _ in trainer():
        pass
    trainer.close()


def test_canter_evaluate_refuses_a_self_opponent_as_canter_eval_does(tmp_path, capsys):
    """``canter.evaluate(agent, env_kwargs={'opponent': 'self'})`` met a random opponent, silently; a self-play
    run's own recorded ``opponent: self`` still evaluates (against random), through the API and the CLI."""
    run = tmp_path / "run"
    agent = canter.train("ppo", "pettingzoo:tests.resign_game", run_dir=run, max_steps=128, n_envs=2, eval_every=0,
                         n_steps=64, batch_size=64, n_epochs=1, env_kwargs={"opponent": "self"})
    with pytest.raises(CanterError, match="env_kwargs opponent: self plays only in training"):
        canter.evaluate(agent, episodes=2, env_kwargs={"opponent": ["random", "self"]})
    assert canter.evaluate(agent, episodes=2).episodes == 2
    assert main(["eval", str(run), "--episodes", "2"]) == 0 and "over 2 episodes" in capsys.readouterr().out


def test_self_play_with_impala_in_one_process():
    """IMPALA without explorers acts through an in-process explorer, whose env needs the binding too
    (its first opponent move once raised 'opponent: self has no policy yet')."""
    trainer = canter.make_trainer("impala", TTT, n_envs=2, max_steps=256, eval_every=0, eval_episodes=2,
                                  env_kwargs={"opponent": "self"})
    records = list(trainer())
    assert records and trainer.step >= 256
    trainer.close()


@pytest.mark.slow
def test_self_play_learns_to_beat_a_random_opponent_it_never_met(tmp_path, capsys):
    run = tmp_path / "run"
    canter.train("ppo", env=TTT, seed=0, n_envs=8, max_steps=115_000, eval_every=0, eval_episodes=200,
                 env_kwargs={"opponent": "self"}, run_dir=run, quiet=True)
    assert main(["eval", str(run), "--episodes", "200", "--json"]) == 0
    returns = np.array(json.loads(capsys.readouterr().out)["returns"])
    assert (returns > 0).mean() >= 0.85, returns.mean()


def test_a_trained_run_as_the_opponent(tmp_path):
    run = tmp_path / "run"
    canter.train("dqn", env=TTT, seed=0, max_steps=2000, eval_every=0, eval_episodes=2, run_dir=run, quiet=True,
                 learning_starts=500)
    env = pack_observations(TurnBasedEnv(TTT, {"opponent": str(run), "seat": "player_2"}, training=True))
    obs, _ = env.reset(seed=1)
    assert obs[:18].sum() == 1  # the loaded policy opened the game
    done = False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(int(np.flatnonzero(obs[-9:])[0]))
        done = terminated or truncated
    assert terminated and not truncated and reward in (-1.0, 0.0, 1.0)  # a finished game, no illegal move
    pool = TurnBasedEnv(TTT, {"opponent": ["random", str(run)]}, training=True)  # a pool: one drawn per game
    drawn = [pool.reset(seed=i)[1]["opponent"] for i in range(40)]
    assert set(drawn) == {"random", str(run)}
    assert (pool.policy is None) == (pool.opponent == "random")  # the policy of the game's own opponent
    with pytest.raises(CanterError, match="empty list"):
        TurnBasedEnv(TTT, {"opponent": []})
    with pytest.raises(CanterError, match="does not fit this game: trained on Box"):  # tic-tac-toe's policy cannot play connect four
        TurnBasedEnv(C4, {"opponent": str(run)})


def test_a_relative_opponent_path_is_recorded_absolute(tmp_path, monkeypatch, capsys):
    """A run trained against ``opponent: runs/x`` given relative to the working directory records it
    absolute, so ``canter eval`` / ``play`` / ``--resume`` find it from elsewhere (they once stopped
    with "opponent 'runs/x' is neither random nor self ...")."""
    monkeypatch.chdir(tmp_path)
    tiny = dict(env=TTT, seed=0, n_envs=2, n_steps=32, batch_size=32, max_steps=64, eval_every=0, eval_episodes=2,
                quiet=True)
    canter.train("ppo", run_dir="opp", **tiny)
    canter.train("ppo", run_dir="learner", **{**tiny, "env_kwargs": {"opponent": ["random", "opp"]}})
    recorded = canter.load(tmp_path / "learner").run_config.env_kwargs["opponent"]
    assert recorded == ["random", str(tmp_path / "opp")]
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert main(["eval", str(tmp_path / "learner"), "--episodes", "2"]) == 0, capsys.readouterr().err


def test_a_checkpoint_named_by_its_base_is_an_opponent(tmp_path, capsys):
    """``runs/x/checkpoints/last`` (a checkpoint as canter.load and canter eval name it) plays the opponent
    seat; it was once refused as "neither random nor self nor a canter run directory or checkpoint"."""
    run = tmp_path / "opp"
    canter.train("ppo", env=TTT, seed=0, n_envs=2, n_steps=32, batch_size=32, max_steps=64, eval_every=0,
                 eval_episodes=2, run_dir=run, quiet=True)
    base = str(run / "checkpoints" / "last")
    env = TurnBasedEnv(TTT, {"opponent": base, "seat": "player_2"}, training=True)
    assert env.policy is not None and env.reset(seed=0)[1]["opponent"] == base
    assert main(["eval", str(run), "--opponent", base, "--episodes", "2"]) == 0, capsys.readouterr().err


def test_eval_against_a_chosen_opponent_and_seat(tmp_path, capsys):
    """``canter eval --opponent RUN --seat AGENT``: a run against a frozen policy (here its own), from one seat."""
    run = tmp_path / "run"
    canter.train("dqn", env=TTT, seed=0, max_steps=1500, eval_every=0, eval_episodes=2, run_dir=run, quiet=True,
                 learning_starts=500)
    assert main(["eval", str(run), "--opponent", str(run), "--seat", "player_2", "--episodes", "6", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["episodes"] == 6 and set(result["returns"]) <= {-1.0, 0.0, 1.0}
    assert main(["eval", str(run), "--opponent", "nowhere"]) == 2  # the option reaches the game's env
    assert "opponent 'nowhere' is neither random nor self" in capsys.readouterr().err
    assert main(["eval", str(run), "--opponent", "self"]) == 2  # it played a random opponent, silently
    assert "--opponent self: a policy against itself scores about 0" in capsys.readouterr().err
    for command in ("eval", "play"):  # the same asked through --env-kwargs once met a random opponent, silently
        assert main([command, str(run), "--env-kwargs", "{opponent: [random, self]}"]) == 2
        assert "--env-kwargs opponent: self plays only in training" in capsys.readouterr().err
    out = tmp_path / "data"  # collect without a run (random moves) wrote a dataset against a random opponent
    assert main(["collect", "--env", TTT, "--env-kwargs", "{opponent: self}", "--out", str(out)]) == 2
    assert "--env-kwargs opponent: self plays only in training" in capsys.readouterr().err
    assert not list(tmp_path.glob("data*"))
    with pytest.raises(CanterError, match="for turn-based PettingZoo games; 'CartPole-v1' is not one"):
        with_opponent("CartPole-v1", {}, "random", None)
    assert with_opponent(TTT, {"seat": "player_1"}, "random", None) == {"seat": "player_1", "opponent": "random"}


def test_connect_four_trains():
    trainer = canter.make_trainer("ppo", C4, n_envs=2, max_steps=512, n_steps=128, batch_size=64, eval_episodes=2)
    assert trainer.env.single_observation_space.mask_width == 7
    records = list(trainer())
    trainer.close()
    assert records[-1].step >= 512 and records[-1].evaluation is not None


@pytest.mark.parametrize("argv, needle", [
    (["--set", "env_kwargs={seat: player_3}"], "unknown seat 'player_3'"),
    (["--set", "env_kwargs={opponent: nowhere}"], "opponent 'nowhere' is neither random nor self"),
    (["--set", "policies=agent"], "seat); drop policies: agent"),
    (["--set", "central_state=true", "--set", "encoder=split"], "seat); drop central_state"),
    (["--set", "env_kwargs={opponent: self}", "--vectorization", "async"], "use --vectorization sync"),
])
def test_refusals(tmp_path, capsys, argv, needle):
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", TTT, *argv], needle)


def test_a_mistyped_opponent_is_answered_with_the_closest_choices(tmp_path):
    """``--opponent rando`` or a run directory a letter off (``runs/ttt-selfpla``) said only 'is neither random nor self
    nor a canter run directory or checkpoint'; the closest of random and self, or of the run directories beside the
    path, are now named."""
    from canter.envs.turns import check_opponent_path

    (tmp_path / "ttt-selfplay").mkdir()
    (tmp_path / "ttt-selfplay" / "config.yaml").write_text("algo: ppo\n")
    with pytest.raises(CanterError, match=r"opponent 'rando' is neither .*; did you mean 'random'\?$"):
        check_opponent_path("rando")
    with pytest.raises(CanterError, match=rf"checkpoint; did you mean '{tmp_path / 'ttt-selfplay'}'\?$"):
        check_opponent_path(str(tmp_path / "ttt-selfpla"))
    with pytest.raises(CanterError, match="nor a canter run directory or checkpoint$"):
        check_opponent_path(str(tmp_path / "zzzzzz"))


@pytest.mark.parametrize("factory", ["env", "parallel_env"])
def test_a_game_missing_a_dependency_when_made_is_one_line(factory, tmp_path, capsys, monkeypatch):
    """PettingZoo's hanabi imports open_spiel (through shimmy) only when made: a traceback before."""
    import types

    def make(**kwargs):
        raise ModuleNotFoundError("Hanabi depends on OpenSpiel via Shimmy: pip install open_spiel")

    module = types.ModuleType("hb_lazy_game")
    setattr(module, factory, make)
    monkeypatch.setitem(sys.modules, "hb_lazy_game", module)
    assert_train_refused(capsys, tmp_path, ["train", "ppo", "--env", "pettingzoo:hb_lazy_game"],
                         "env 'pettingzoo:hb_lazy_game' is missing a dependency: Hanabi depends on OpenSpiel")


def test_recurrent_self_play_is_refused():
    with pytest.raises(CanterError, match="recurrent policy cannot play"):
        canter.make_trainer("recurrent_ppo", TTT, n_envs=2, env_kwargs={"opponent": "self"})


def test_a_turn_based_run_resumes_exactly(tmp_path):
    """The games' boards and PettingZoo's agent selectors are plain Python objects: the env state
    snapshot walks into them (canter.envs.state), so a resumed run equals an uninterrupted one."""
    common = dict(env=TTT, seed=2, n_envs=2, n_steps=128, batch_size=64, eval_every=512, eval_episodes=4,
                  checkpoint_every=512, quiet=True, env_kwargs={"opponent": "self"})
    whole = canter.train("ppo", max_steps=1024, run_dir=tmp_path / "whole", **common)
    canter.train("ppo", max_steps=512, run_dir=tmp_path / "part", **common)
    resumed = canter.resume(tmp_path / "part", max_steps=1024)
    for a, b in zip(whole.algorithm.model.parameters(), resumed.algorithm.model.parameters()):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    assert json.loads((tmp_path / "part" / "summary.json").read_text())["resume_exact"] is True


def test_an_old_run_whose_opponent_changed_since_resumes_inexact_with_a_warning(tmp_path):
    """A run saved before runs kept copies of their opponents (no RUN_DIR/opponents/, canter.envs.opponents) reloads
    its opponent on --resume; that run trained further meanwhile (its best was saved again), so the resumed run
    played another opponent while summary.json said resume_exact: true. The opponent's checkpoint id is recorded
    in 'last': a changed one is a one-line warning naming it, and inexact."""
    import shutil

    import torch

    from canter.errors import CanterWarning

    tiny = dict(env=TTT, n_envs=2, n_steps=32, batch_size=64, n_epochs=1, eval_every=0, eval_episodes=1,
                tensorboard=False)
    canter.train("ppo", max_steps=64, run_dir=tmp_path / "opponent", **tiny)
    canter.train("ppo", max_steps=64, run_dir=tmp_path / "run", env_kwargs={"opponent": str(tmp_path / "opponent")},
                 **tiny)
    best = json.loads((tmp_path / "opponent" / "checkpoints" / "best.json").read_text())["checkpoint_id"]
    last = json.loads((tmp_path / "run" / "checkpoints" / "last.json").read_text())
    assert last["trainer"]["opponents"] == {str(tmp_path / "opponent"): best}  # the checkpoint the envs loaded
    shutil.rmtree(tmp_path / "run" / "opponents")  # as an older canter wrote the run
    opponent = canter.load(tmp_path / "opponent")  # its run trains further: a new best
    with torch.no_grad():
        next(opponent.algorithm.model.parameters()).add_(0.5)
    opponent.save(tmp_path / "opponent" / "checkpoints" / "best")
    with pytest.warns(CanterWarning, match=f"opponent '{tmp_path / 'opponent'}' has saved another checkpoint"):
        canter.resume(tmp_path / "run", max_steps=128)
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["resume_exact"] is False


def test_native_vectorization_of_a_turn_based_game_or_a_canter_env_is_refused():
    """--vectorization native on a turn-based game (or an env canter registers) silently stepped sync copies."""
    from canter.errors import CanterError

    with pytest.raises(CanterError, match="turn-based game, with no native vectorised implementation"):
        make_vec_env(TTT, 2, vectorization="native")
    # an env canter registers (CartPoleNoVel-v1) quietly ran sync, as a gymnasium id without one is refused
    with pytest.raises(CanterError, match="env 'CartPoleNoVel-v1' has no native vectorised implementation"):
        make_vec_env("CartPoleNoVel-v1", 2, vectorization="native")


def test_a_game_over_before_the_learners_first_move_is_not_its_episode():
    """An opponent that resigns on the game's first move ends it before the learner's seat has moved: reset
    returned that finished game's observation as a start, and the learner's move then reached PettingZoo
    as a dead player's action ('when an agent is dead, the only valid action is None')."""
    env = TurnBasedEnv("pettingzoo:tests.resign_game", {"seat": "player_1"}, training=True)
    for seed in range(20):
        env.reset(seed=seed)
        assert not (env.game.terminations[env.learner] or env.game.truncations[env.learner])
        env.step(1)  # the learner plays on: a live move in every game


def test_a_seat_that_never_gets_a_move_is_one_line(monkeypatch):
    env = TurnBasedEnv("pettingzoo:tests.resign_game", {"seat": "player_1"}, training=True)
    monkeypatch.setattr(env, "_opponent_move", lambda *args: 0)  # the first player always resigns at once
    with pytest.raises(CanterError, match="1000 games in a row ended before seat player_1 moved"):
        env.reset(seed=0)


def test_evaluation_and_play_of_a_game_without_a_move_limit_end(monkeypatch):
    """A game that never ends (no move limit, nobody resigns): an evaluation or play episode is truncated after
    EVAL_EPISODE_CAP moves of the learner's (it hung, as a parallel env's did before its cap); training plays on."""
    monkeypatch.setattr("canter.envs.make.EVAL_EPISODE_CAP", 5)
    endless = {"max_moves": None, "resign": False}
    one = make_env("pettingzoo:tests.resign_game", **endless)
    one.reset(seed=0)
    assert [one.step(1)[3] for _ in range(5)] == [False] * 4 + [True]
    env = make_vec_env("pettingzoo:tests.resign_game", 2, env_kwargs=endless)

    class _PlayOn:
        def predict(self, obs):
            return np.ones(len(obs), np.int64)

    from canter.trainers.evaluation import evaluate

    assert evaluate(_PlayOn(), env, 3, seed=0).lengths == [5, 5, 5]
    env.close()
    train = make_vec_env("pettingzoo:tests.resign_game", 1, env_kwargs=endless, training=True)
    train.reset(seed=0)
    assert not any(train.step(np.ones(1, np.int64)).truncated.any() for _ in range(8))
    train.close()
