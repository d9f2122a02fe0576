"""``quiet`` of canter.train / make_trainer / resume / resume_trainer is a bool, checked as ``deterministic`` and
``weights_only`` are (canter.errors.bool_argument): ``quiet="no"`` was truthy, so the run was silent, and
``quiet=None`` falsy, so the console was shown; both are one-line errors before anything is built."""
import numpy as np
import pytest

import canter
from canter.api import resume_trainer
from canter.errors import CanterError


@pytest.mark.parametrize("quiet", ["no", "False", None, 0])
@pytest.mark.parametrize("call", [canter.train, canter.make_trainer])
def test_train_and_make_trainer_refuse_a_quiet_that_is_no_bool(tmp_path, call, quiet):
    with pytest.raises(CanterError, match=r"^quiet must be True or False, got"):
        call("ppo", "CartPole-v1", run_dir=tmp_path / "run", quiet=quiet)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("call", [canter.resume, resume_trainer])
def test_resume_refuses_a_quiet_that_is_no_bool(tmp_path, call):
    with pytest.raises(CanterError, match=r"^quiet must be True or False, got 'no'"):
        call(tmp_path, quiet="no")


def test_numpy_bools_are_taken():
    trainer = canter.make_trainer("ppo", "CartPole-v1", quiet=np.bool_(True), max_steps=64, n_envs=1, n_steps=64,
                                  batch_size=64)
    trainer.close()
