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


def test_a_results_file_that_is_missing_empty_or_broken_is_one_line_and_the_report_is_kept(capsys, tmp_path):
    """``--report`` read a missing file with a traceback, and an empty selection (``bench_atari --since`` with
    nothing after it, or a mistyped time) replaced the section in RESULTS.md with an empty table."""
    import bench_atari
    import bench_explorers
    import onpolicy_quality

    out = tmp_path / "RESULTS.md"
    out.write_text("<!-- bench_atari: start -->\nkept\n<!-- bench_atari: end -->\n")
    missing, empty, broken = tmp_path / "missing.jsonl", tmp_path / "empty.jsonl", tmp_path / "broken.jsonl"
    empty.write_text("\n")
    broken.write_text('{"lib": "canter"}\n{"lib": "sb3", "fp\n')
    row = {"lib": "canter", "algo": "ppo", "seed": 1, "date": "2026-11-20 10:00 UTC", "fps": 1.0}
    rows = tmp_path / "rows.jsonl"
    rows.write_text(__import__("json").dumps(row) + "\n")
    assert "missing.jsonl" in one_line_exit_2(capsys, lambda: bench_atari.main(["--report", "--jsonl", str(missing),
                                                                                "--out", str(out)]))
    assert "line 2" in one_line_exit_2(capsys, lambda: bench_atari.main(["--report", "--jsonl", str(broken),
                                                                         "--out", str(out)]))
    err = one_line_exit_2(capsys, lambda: bench_atari.main(["--report", "--jsonl", str(rows), "--out", str(out),
                                                            "--since", "2026-11-21 00:00"]))
    assert "no CPU jobs" in err and "left as it was" in err
    assert "'yesterday'" in one_line_exit_2(capsys, lambda: bench_atari.main(["--report", "--since", "yesterday",
                                                                               "--out", str(out)]))
    assert out.read_text() == "<!-- bench_atari: start -->\nkept\n<!-- bench_atari: end -->\n"
    for argv in (["report", "--jsonl", str(missing)], ["report", "--jsonl", str(empty), "--out", str(out)]):
        one_line_exit_2(capsys, lambda: onpolicy_quality.main(argv))
    for path in (missing, empty):
        one_line_exit_2(capsys, lambda: bench_explorers.main(["--report", str(path)]))
    assert out.read_text() == "<!-- bench_atari: start -->\nkept\n<!-- bench_atari: end -->\n"


@pytest.mark.parametrize("job", [["foo", "ppo"], ["canter", "sac"]])
def test_an_unknown_atari_job_is_refused_before_it_runs(capsys, monkeypatch, tmp_path, job):
    """``--job foo ppo`` ran SB3's Pong job (any LIB but canter) and would have recorded it as lib 'foo';
    ``--job canter sac`` was a KeyError traceback."""
    import bench_atari
    import subprocess

    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("a job started"))
    err = one_line_exit_2(capsys, lambda: bench_atari.main(["--job", *job, "--jsonl", str(tmp_path / "a.jsonl")]))
    assert " ".join(job) in err and not (tmp_path / "a.jsonl").exists()


def test_appending_after_an_unterminated_last_line_starts_a_new_line(tmp_path, monkeypatch):
    """A results file whose last line lost its newline (a write cut short, an editor) had the next run's row
    glued to it, so that neither line was JSON any more; each script now appends through append_jsonl."""
    import json

    import bench_offpolicy

    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n{"b": 2}')
    monkeypatch.setattr(bench_offpolicy, "RESULTS_JSONL", path)
    bench_offpolicy._append({"c": 3})
    _common.append_jsonl(path, [{"d": 4}, {"e": 5}])
    assert _common.read_jsonl(path) == [{"a": 1}, {"b": 2}, {"c": 3}, {"d": 4}, {"e": 5}]
    new = tmp_path / "new.jsonl"
    _common.append_jsonl(new, [{"f": 6}])
    assert new.read_text() == json.dumps({"f": 6}) + "\n"


@pytest.mark.parametrize("argv", [["--repeats", "0"], ["--episodes", "-5"], ["--reuse", "--keep", "{tmp}"]])
def test_bench_rundata_refuses_a_count_below_one_or_a_missing_run_to_reuse(capsys, monkeypatch, tmp_path, argv):
    """--repeats 0 made the run, timed nothing and printed nothing (exit 0); --reuse of a directory without the
    run was a CalledProcessError traceback from the first tool."""
    import bench_rundata

    monkeypatch.setattr(bench_rundata, "make_run", lambda *a: pytest.fail("a run was made"))
    monkeypatch.setattr(bench_rundata, "time_tools", lambda *a: pytest.fail("a tool was timed"))
    argv = [a.format(tmp=tmp_path) for a in argv]
    assert argv[1] in one_line_exit_2(capsys, lambda: bench_rundata.main(argv))


@pytest.mark.parametrize("script, argv", [
    ("bench_cartpole", ["--seeds", "1", "-1"]), ("bench_a2c", ["--seeds", "4294967296"]),
    ("bench_atari", ["--pair", "ppo", "--seed", "-1"]), ("bench_offpolicy", ["quality", "sac", "Pendulum-v1", "--segment", "0"]),
])
def test_a_seed_out_of_range_or_an_empty_segment_is_refused_before_any_run(capsys, script, argv):
    """A seed out of range reached the worker processes (bench_a2c --quick --seeds 4294967296: a RuntimeError
    traceback with the worker's stderr, exit 1); quality --segment 0 saved a segment after every step."""
    module = __import__(script)
    assert "error: " in one_line_exit_2(capsys, lambda: module.main(argv))


def test_an_atari_report_window_with_one_digit_hours_or_days_selects_by_time_not_text(capsys, monkeypatch, tmp_path):
    """--since/--until were checked with strptime, which takes '9:00' and '2026-11-2', but then compared as text with
    the rows' dates: --since '2026-11-20 9:00' left out a job at 10:00 ('1' < '9'), --until took it in."""
    import json

    import bench_atari

    rows = [{"lib": lib, "algo": "ppo", "seed": 1, "fps": fps, "date": "2026-11-20 10:00 UTC", "loadavg": "0"}
            for lib, fps in (("canter", 300.0), ("sb3", 100.0))]
    jsonl, out = tmp_path / "a.jsonl", tmp_path / "RESULTS.md"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(bench_atari, "_versions", lambda: "v")
    assert bench_atari.main(["--report", "--jsonl", str(jsonl), "--out", str(out), "--since", "2026-11-20 9:00"]) == 0
    assert '--since "2026-11-20 09:00"' in out.read_text() and "| PPO | 3,072 | 300 (1) |" in out.read_text()
    err = one_line_exit_2(capsys, lambda: bench_atari.main(["--report", "--jsonl", str(jsonl), "--out", str(out),
                                                            "--until", "2026-11-20 9:59"]))
    assert 'no CPU jobs' in err and '--until "2026-11-20 09:59"' in err


@pytest.mark.parametrize("content", [None, "", "\n"])
def test_the_offpolicy_report_of_a_missing_or_empty_results_file_keeps_the_section(capsys, monkeypatch, tmp_path,
                                                                                   content):
    """``bench_offpolicy.py report`` took a missing results file as no rows and replaced the off-policy tables of
    RESULTS.md with an empty section (exit 0), where the other scripts' reports refuse an empty selection."""
    import bench_offpolicy

    jsonl, md = tmp_path / "offpolicy_results.jsonl", tmp_path / "RESULTS.md"
    if content is not None:
        jsonl.write_text(content)
    md.write_text("before\n<!-- offpolicy:begin -->\nthe tables\n<!-- offpolicy:end -->\nafter\n")
    monkeypatch.setattr(bench_offpolicy, "RESULTS_JSONL", jsonl)
    monkeypatch.setattr(bench_offpolicy, "RESULTS_MD", md)
    assert "offpolicy_results.jsonl" in one_line_exit_2(capsys, lambda: bench_offpolicy.main(["report"]))
    assert md.read_text() == "before\n<!-- offpolicy:begin -->\nthe tables\n<!-- offpolicy:end -->\nafter\n"


@pytest.mark.parametrize("argv", [["--seconds", "0"], ["--seconds", "-1"], ["--seconds", "nan"], ["--sleep-ms", "-1"],
                                  ["--warmup", "inf"]])
def test_an_explorer_window_or_sleep_that_cannot_be_measured_is_refused_before_any_run(capsys, monkeypatch, argv):
    """e683b994 checked --explorers/--n-envs/--n-steps, but --seconds 0 still started Ray and trained, then the
    worker divided by its zero-second window (ZeroDivisionError traceback, exit 1); a negative --sleep-ms failed
    in the env's time.sleep the same way."""
    import bench_explorers

    monkeypatch.setattr(bench_explorers, "measure", lambda args: pytest.fail("a run started"))
    assert argv[1] in one_line_exit_2(capsys, lambda: bench_explorers.main(["--explorers", "1", *argv]))


@pytest.mark.parametrize("argv", [[], ["{tmp}/nosuch"]])
def test_pong_learning_curve_answers_a_bad_flag_or_run_directory_in_one_line(capsys, tmp_path, argv):
    """e27e3a8c moved every script but pong_learning_curve.py to BenchParser and one_line_errors: it still printed
    argparse's usage block for a missing run directory, and a CanterError traceback for one that does not exist."""
    import pong_learning_curve

    out = tmp_path / "RESULTS.md"
    argv = [a.format(tmp=tmp_path) for a in argv] + ["--out", str(out)]
    err = one_line_exit_2(capsys, lambda: pong_learning_curve.main(argv))
    assert "usage:" not in err and ("run_dir" in err or "nosuch" in err) and not out.exists()


def test_a_results_line_that_is_not_an_object_or_another_scripts_is_one_line(capsys, tmp_path):
    """read_jsonl refused only lines that are not JSON: a JSON array, or a results file of another script given to
    --report (bench_explorers --report offpolicy_results.jsonl), was a TypeError or KeyError traceback."""
    import bench_atari
    import bench_explorers

    array, offpolicy = tmp_path / "array.jsonl", tmp_path / "offpolicy.jsonl"
    array.write_text('[1, 2]\n')
    offpolicy.write_text('{"kind": "speed", "lib": "canter", "algo": "sac", "seed": 1, "steps": 3000}\n')
    assert "line 1: not a JSON object" in one_line_exit_2(capsys, lambda: bench_explorers.main(["--report", str(array)]))
    err = one_line_exit_2(capsys, lambda: bench_explorers.main(["--report", str(offpolicy)]))
    assert "offpolicy.jsonl, line 1: no 'explorers', 'sleep_ms'" in err
    err = one_line_exit_2(capsys, lambda: bench_atari.main(["--report", "--jsonl", str(offpolicy), "--out",
                                                            str(tmp_path / "R.md")]))
    assert "no 'date'" in err and not (tmp_path / "R.md").exists()


def test_an_unknown_explorer_algorithm_is_refused_before_any_worker_starts(capsys, monkeypatch, tmp_path):
    """bench_explorers --algo nosuch started a worker per explorer count, whose error came back as two lines
    ('explorers=1 failed:' and canter's message) with exit 1, after ~10 s."""
    import subprocess

    import bench_explorers

    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("a worker started"))
    err = one_line_exit_2(capsys, lambda: bench_explorers.main(["--algo", "nosuch", "--jsonl", str(tmp_path / "e")]))
    assert "unknown algorithm 'nosuch'" in err and not (tmp_path / "e").exists()


@pytest.mark.parametrize("script, argv", [
    ("onpolicy_quality", ["run", "a2c", "CartPole-v1", "1", "--max-steps", "400", "--jsonl", "{jsonl}"]),
    ("bench_explorers", ["--explorers", "1", "--jsonl", "{jsonl}"]),
    ("bench_atari", ["--job", "canter", "ppo", "--jsonl", "{jsonl}"]),
    ("bench_offpolicy", ["quality", "sac", "Pendulum-v1", "--max-steps", "150", "--jsonl", "{jsonl}"]),
    ("bench_offpolicy", ["speed", "--jsonl", "{jsonl}"]),
])
def test_a_results_file_that_cannot_be_appended_to_is_refused_before_the_run(capsys, monkeypatch, tmp_path, script,
                                                                             argv):
    """--jsonl in a folder that does not exist: onpolicy_quality run trained, then lost the result to a
    FileNotFoundError traceback (its row is appended before it is printed); bench_atari's jobs the same, and
    bench_offpolicy's quality and speed runs (left out of e74d7ee4)."""
    import subprocess

    module = __import__(script)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("a job started"))
    for name in ("run", "measure", "run_quality", "run_speed"):
        if hasattr(module, name):
            monkeypatch.setattr(module, name, lambda *a, **k: pytest.fail("a run started"))
    jsonl = tmp_path / "nosuch" / "r.jsonl"
    err = one_line_exit_2(capsys, lambda: module.main([a.format(jsonl=jsonl) for a in argv]))
    assert "does not exist" in err and str(jsonl) in err


@pytest.mark.parametrize("algo, said", [("dqn", "has no hyperparameter 'n_steps'"),
                                        ("acer", "does not run on explorers"),
                                        ("mappo", "has one agent")])
def test_an_explorer_algorithm_the_workers_would_refuse_is_refused_before_any_worker_starts(capsys, monkeypatch,
                                                                                           tmp_path, algo, said):
    """b84f7fd7 looked --algo up in the registry, but a registered algorithm that the worker's run refuses (dqn: no
    n_steps; acer: not run on explorers) still started a worker per explorer count: 'explorers=1 failed:' and
    canter's message, exit 1, after ~15 s."""
    import subprocess

    import bench_explorers

    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("a worker started"))
    jsonl = tmp_path / "e.jsonl"
    err = one_line_exit_2(capsys, lambda: bench_explorers.main(["--algo", algo, "--explorers", "1", "--jsonl",
                                                                str(jsonl)]))
    assert said in err and not jsonl.exists()
    if algo == "acer":  # the closest valid choices, not those that fail the same way
        assert "ppo" in err and "impala" in err and "mappo" not in err.split("one of:")[1]


def test_pong_learning_curve_refuses_an_out_with_one_marker_before_it_replaces_the_figure(capsys, monkeypatch,
                                                                                        tmp_path):
    """5cb37a74 made a bad input one line with nothing written, but an --out with one marker and not the other was
    found out by write_section after report() had replaced benchmarks/pong_ppo_1h.png with the refused run's figure
    (reproduced with a CartPole run directory: the committed figure overwritten, exit 2)."""
    import pong_learning_curve

    monkeypatch.setattr(pong_learning_curve, "report", lambda run_dir: pytest.fail("the figure was drawn"))
    out = tmp_path / "RESULTS.md"
    out.write_text("x\n<!-- pong_curve: start -->\nold\n")
    err = one_line_exit_2(capsys, lambda: pong_learning_curve.main([str(tmp_path), "--out", str(out)]))
    assert "has the marker <!-- pong_curve: start --> but not" in err
    assert out.read_text() == "x\n<!-- pong_curve: start -->\nold\n"


def test_pong_learning_curve_of_a_run_without_a_finished_episode_is_one_line(capsys, tmp_path):
    """A run directory whose history has no episode yet (a run just started) was a ValueError traceback from
    frames.max() ('zero-size array to reduction operation maximum'), with the figure not yet drawn."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pong_learning_curve

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("algo: ppo\nenv: CartPole-v1\nseed: 1\n")
    pq.write_table(pa.table({c: pa.array([], pa.float64()) for c in ("step", "wall_time", "episode_return",
                                                                      "rolling_return")}), run / "history.parquet")
    out = tmp_path / "RESULTS.md"
    err = one_line_exit_2(capsys, lambda: pong_learning_curve.main([str(run), "--out", str(out)]))
    assert "no finished training episode" in err and not out.exists()


def test_an_atari_report_of_another_scripts_results_with_lib_algo_and_date_is_one_line(capsys, tmp_path):
    """97024bfe's keys for bench_atari's report were lib, algo and date, which bench_offpolicy's speed rows have too:
    the report of such a file (the README's `bench_offpolicy.py speed --steps 200 --jsonl` smoke file) was a
    KeyError 'loadavg' traceback; atari_flops.py's selection read 'fps' unchecked the same way."""
    import json

    import atari_flops
    import bench_atari

    speed = {"kind": "speed", "lib": "sb3", "algo": "ppo", "steps": 200, "sps": 50.0, "seed": 1,
             "date": "2026-11-22 05:37 UTC", "threads": 1}
    jsonl, out = tmp_path / "smoke.jsonl", tmp_path / "R.md"
    jsonl.write_text(json.dumps(speed) + "\n")
    err = one_line_exit_2(capsys, lambda: bench_atari.main(["--report", "--jsonl", str(jsonl), "--out", str(out)]))
    assert "line 1: no 'fps'" in err and not out.exists()
    assert "line 1: no 'fps'" in one_line_exit_2(capsys, lambda: atari_flops.sb3_seconds_per_env_step(jsonl))


def test_pong_learning_curve_of_a_run_without_a_history_file_is_one_line(capsys, tmp_path):
    """cdc8c146 checked len(history['step']), but a run directory without history.parquet (load_run: an empty
    history) was a KeyError 'step' traceback there."""
    import pong_learning_curve

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("algo: ppo\nenv: CartPole-v1\nseed: 1\n")
    out = tmp_path / "RESULTS.md"
    err = one_line_exit_2(capsys, lambda: pong_learning_curve.main([str(run), "--out", str(out)]))
    assert "no finished training episode" in err and not out.exists()
