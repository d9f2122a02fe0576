"""The Python calls that one-line errors suggest write a path as a Python literal (repr), so a run directory with a
quote in its name pastes as valid code (ee88fde3 did this for a moved dataset's canter.resume hint)."""
from __future__ import annotations

import ast

import pytest

from canter.errors import CanterError


def test_an_iterated_runs_second_call_names_resume_with_its_path_as_a_literal(tmp_path, tiny_ppo):
    import canter

    run_dir = tmp_path / "bob's run"
    run = canter.make_trainer("ppo", "CartPole-v1", run_dir=run_dir, **{**tiny_ppo, "max_steps": 128, "eval_episodes": 0,
                                                                        "n_epochs": 1}, tensorboard=False)
    for _ in run():
        pass
    with pytest.raises(CanterError) as info:
        run()
    message = str(info.value)
    for call in ("canter.api.resume_trainer(", "canter.resume("):
        code = call + message.split(call, 1)[1].split(")")[0] + ")"
        args = ast.parse(code, mode="eval").body.args  # a SyntaxError where the quote in the path ended the literal
        assert [ast.literal_eval(a) for a in args] == [str(run_dir)], code
