"""The benchmark scripts' answers to bad flags and input files: one line of stderr, exit code 2, no traceback,
and no results file touched."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
import _common  # noqa: E402


def one_line_exit_2(capsys, call) -> str:
    with pytest.raises(SystemExit) as exc:
        call()
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("script, argv", [
    ("bench_a2c", ["--seeds"]), ("bench_cartpole", ["--seeds", "x"]), ("bench_offpolicy", ["nosuch"]),
    ("onpolicy_quality", ["run", "a2c"]), ("bench_explorers", ["--explorers"]), ("bench_atari", ["--pair", "sac"]),
    ("bench_rundata", ["--tools", "nosuch"]),
])
def test_a_bad_flag_is_one_line_without_the_usage_block(capsys, script, argv):
    module = __import__(script)
    err = one_line_exit_2(capsys, lambda: module.main(argv))
    assert err.startswith("error: ") and "usage:" not in err and "--help" in err


def test_an_unknown_algorithm_is_canters_one_line_error_and_nothing_is_appended(capsys, tmp_path):
    import onpolicy_quality

    jsonl = tmp_path / "q.jsonl"
    err = one_line_exit_2(capsys, lambda: onpolicy_quality.main(["run", "nosuch", "CartPole-v1", "1",
                                                                 "--jsonl", str(jsonl)]))
    assert "unknown algorithm 'nosuch'" in err and not jsonl.exists()


@pytest.mark.parametrize("script, argv", [
    ("bench_a2c", ["--steps", "0"]), ("bench_explorers", ["--explorers", "0"]), ("bench_explorers", ["--n-envs", "-1"]),
    ("bench_offpolicy", ["speed", "--steps", "0"]), ("bench_offpolicy", ["speed", "--steps", "100"]),
])
def test_a_budget_that_measures_nothing_is_refused_before_any_run(capsys, monkeypatch, tmp_path, script, argv):
    """``bench_offpolicy.py speed --steps 0`` appended four rows (SB3 at 0 env-steps/s) that the report then paired as
    the latest measurement of seed 1 (and divided by); --steps 100 or less never trains (learning_starts 100)."""
    module = __import__(script)
    if script == "bench_offpolicy":
        monkeypatch.setattr(module, "RESULTS_JSONL", tmp_path / "results.jsonl")
        monkeypatch.setattr(module, "run_speed", lambda *a: pytest.fail("a speed run started"))
    err = one_line_exit_2(capsys, lambda: module.main(argv))
    assert argv[-1] in err
    assert not (tmp_path / "results.jsonl").exists()
