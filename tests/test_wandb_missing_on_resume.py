"""A run that logs to W&B (``wandb: true``), resumed where wandb is not installed (another machine, a new venv): the
error said '--wandb needs the 'wandb' package', naming a flag the resume was not given and not the way on without
W&B that ``--resume`` takes, ``--no-wandb``."""
from __future__ import annotations

import sys
import types

import pytest

import canter
from canter.errors import CanterError, MissingExtraError

KW = dict(n_envs=1, n_steps=8, eval_episodes=0, tensorboard=False)


def test_the_error_names_the_run_and_no_wandb(tmp_path, monkeypatch):
    fake = types.SimpleNamespace(init=lambda **kw: types.SimpleNamespace(log=lambda data, step: None, starting_step=0,
                                                                         finish=lambda exit_code=None: None),
                                 Settings=lambda **kw: None)
    monkeypatch.setitem(sys.modules, "wandb", fake)
    canter.train("a2c", "CartPole-v1", run_dir=tmp_path / "run", max_steps=16, wandb=True, **KW)
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb: ImportError
    with pytest.raises(MissingExtraError, match=r"^this run logs to W&B \(wandb: true\), which needs the 'wandb' "
                                                r"package; install it with: pip install 'canter\[wandb\]', or resume "
                                                r"without W&B: --no-wandb \(Python: wandb=False\)$"):
        canter.resume(tmp_path / "run", max_steps=32)
    canter.resume(tmp_path / "run", max_steps=32, wandb=False)  # the way it names
    with pytest.raises(MissingExtraError, match=r"^--wandb needs the 'wandb' package"):  # a new run: as before
        canter.train("a2c", "CartPole-v1", run_dir=tmp_path / "new", max_steps=16, wandb=True, **KW)


def test_an_old_wandb_on_resume_names_no_wandb_too(tmp_path, monkeypatch):
    """wandb older than MIN_WANDB, found by a resumed run that logs to W&B, was still '--wandb needs wandb>=...', the
    flag the resume was not given, without --no-wandb; a new run's line is as before."""
    fake = types.SimpleNamespace(init=lambda **kw: types.SimpleNamespace(log=lambda data, step: None, starting_step=0,
                                                                         finish=lambda exit_code=None: None),
                                 Settings=lambda **kw: None)
    monkeypatch.setitem(sys.modules, "wandb", fake)
    canter.train("a2c", "CartPole-v1", run_dir=tmp_path / "run", max_steps=16, wandb=True, **KW)
    fake.__version__ = "0.15.0"
    with pytest.raises(CanterError, match=r"^this run logs to W&B \(wandb: true\), which needs wandb>=0\.19\.10, found "
                                          r"0\.15\.0; upgrade it with: pip install -U 'canter\[wandb\]', or resume "
                                          r"without W&B: --no-wandb \(Python: wandb=False\)$"):
        canter.resume(tmp_path / "run", max_steps=32)
    with pytest.raises(CanterError, match=r"^--wandb needs wandb>=0\.19\.10, found 0\.15\.0; upgrade it with: pip "
                                          r"install -U 'canter\[wandb\]'$"):
        canter.train("a2c", "CartPole-v1", run_dir=tmp_path / "new", max_steps=16, wandb=True, **KW)


def test_a_resume_turning_wandb_on_is_told_as_a_new_run(tmp_path, monkeypatch):
    """A run trained without W&B, resumed with wandb=True (--wandb) where wandb is missing, was told 'this run logs to
    W&B (wandb: true) ... or resume without W&B: --no-wandb': the run did not, and the W&B asked for was the resume's."""
    canter.train("a2c", "CartPole-v1", run_dir=tmp_path / "run", max_steps=16, **KW)
    monkeypatch.setitem(sys.modules, "wandb", None)
    with pytest.raises(MissingExtraError, match=r"^--wandb needs the 'wandb' package; install it with: pip install "
                                                r"'canter\[wandb\]'$"):
        canter.resume(tmp_path / "run", max_steps=32, wandb=True)
