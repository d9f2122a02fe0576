"""A multi-policy run's member trainers are made while their warnings are taken (to be given again named by policy);
that took ``warnings.catch_warnings``, whose exit resets Python's record of the warnings already shown once per place,
so the next env made in the process (a second run's) showed its constructor's warning again."""
from __future__ import annotations

import warnings

import pytest

pytest.importorskip("pettingzoo")

import canter  # noqa: E402
from canter.utils import provenance  # noqa: E402

ENV = "pettingzoo:tests.mixed_agents_warns"


def test_an_env_constructors_warning_is_shown_once_over_two_multi_policy_runs(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        provenance()  # the git look-ups (cached) start processes: Python 3.11's os.get_exec_path resets the record too
        for i in range(2):
            trainer = canter.make_trainer("ppo", ENV, policies="type", run_dir=tmp_path / str(i), max_steps=64,
                                          n_envs=1, n_steps=16, batch_size=16, tensorboard=False)
            trainer.close()
    assert [str(w.message) for w in caught if "mixed_agents_warns" in str(w.message)] == ["mixed_agents_warns: made"]


def test_each_policys_member_warning_is_still_given_named_by_policy(tmp_path):
    """The same member warning, of each policy, is taken (not only the first policy's) and given named by policy."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        canter.make_trainer("ppo", ENV, policies="agent", run_dir=tmp_path, max_steps=300, n_envs=1, n_steps=16,
                            batch_size=100, tensorboard=False).close()
    said = sorted(str(w.message).split(" (")[0] for w in caught if "batch_size" in str(w.message))
    assert said == ["policy 'listener_0'", "policy 'listener_1'", "policy 'speaker_0'"], said


def test_an_error_filter_raises_the_warning_named_by_policy_and_the_filters_are_left_as_they_were(tmp_path):
    """A filter's 'error' applies to the warning as the run gives it (named by policy), as with catch_warnings and
    'always' before; the 'always' filter put in place is taken out again."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", canter.CanterWarning)
        before = list(warnings.filters)
        with pytest.raises(canter.CanterWarning, match=r"^policy 'listener_0' .*hparams\.batch_size \(100\)"):
            canter.make_trainer("ppo", ENV, policies="agent", run_dir=tmp_path, max_steps=300, n_envs=1, n_steps=16,
                                batch_size=100, tensorboard=False)
        assert warnings.filters == before


def _trainer(env, tmp_path, **kw):
    """Every run made from this one line: its warnings are given at the same place, in the same record."""
    return canter.make_trainer("ppo", env, run_dir=tmp_path, max_steps=300, n_envs=1, n_steps=16, batch_size=100,
                               tensorboard=False, **kw)


def test_a_member_warning_shown_before_in_the_same_words_is_still_given_named_by_policy(tmp_path):
    """A single-policy run's warning, shown once at the caller's line, was in Python's once-per-place record when a
    multi-policy run's members gave the same words at that line: Python dropped them before any filter (its 'always'
    included), so no policy's warning was given at all."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        provenance()
        _trainer("CartPole-v1", tmp_path / "single").close()
        _trainer(ENV, tmp_path / "multi", policies="agent").close()
    said = [str(w.message).split(" (")[0] for w in caught if "batch_size" in str(w.message)]
    assert said == ["hparams.batch_size", "policy 'listener_0'", "policy 'listener_1'", "policy 'speaker_0'"], said


def test_warnings_taken_takes_a_canter_warning_already_shown_at_its_place():
    from canter.errors import CanterWarning, warn
    from canter.held_warnings import warnings_taken

    def give() -> None:
        warn(CanterWarning("given twice"))

    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("default")
        give()
        taken: list[warnings.WarningMessage] = []
        with warnings_taken(taken):
            give()
    assert [str(w.message) for w in shown] == ["given twice"]
    assert [str(w.message) for w in taken] == ["given twice"]
