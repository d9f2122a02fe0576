"""bench_offpolicy.py appended every run to the committed benchmarks/offpolicy_results.jsonl: its smoke checks and
tests had to take their rows out again. --jsonl (the flag bench_atari, bench_explorers and onpolicy_quality name
their results file with) points speed and quality at another file, and report reads it."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
import bench_offpolicy  # noqa: E402


def _fake_worker(cmd, **kw):
    lib, algo, seed = cmd[3], cmd[4], int(cmd[cmd.index("--seed") + 1])
    row = {"kind": "speed", "lib": lib, "algo": algo, "steps": 200, "transitions": 200, "seconds": 2.0,
           "sps": 100.0 if lib == "canter" else 50.0, "threads": 1, "seed": seed, "matmul_precision": "highest"}
    return subprocess.CompletedProcess(cmd, 0, stdout=bench_offpolicy.RESULT_TAG + json.dumps(row) + "\n", stderr="")


def test_speed_and_report_use_the_jsonl_given(tmp_path, monkeypatch, capsys):
    committed = tmp_path / "committed.jsonl"  # the default file, which must stay untouched
    monkeypatch.setattr(bench_offpolicy, "RESULTS_JSONL", committed)
    monkeypatch.setattr(bench_offpolicy, "require_sb3", lambda: None)
    monkeypatch.setattr(bench_offpolicy.subprocess, "run", _fake_worker)
    out = tmp_path / "smoke.jsonl"
    assert bench_offpolicy.main(["speed", "--steps", "200", "--jsonl", str(out)]) == 0
    assert not committed.exists()
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["algo"], r["lib"]) for r in rows] == [("sac", "canter"), ("sac", "sb3"), ("td3", "canter"),
                                                     ("td3", "sb3")]
    md = tmp_path / "RESULTS.md"
    md.write_text(f"# R\n\n{bench_offpolicy.BEGIN}\nold\n{bench_offpolicy.END}\n")
    monkeypatch.setattr(bench_offpolicy, "RESULTS_MD", md)
    assert bench_offpolicy.main(["report", "--jsonl", str(out)]) == 0
    assert "| 200 | 1 | 100.0 | 50.0 |" in md.read_text() and "old" not in md.read_text()
    assert not committed.exists()


@pytest.mark.parametrize("rows", [None, [], [{"kind": "segment", "algo": "sac", "env": "Pendulum-v1", "step": 250}]])
def test_report_from_a_missing_or_empty_jsonl_leaves_results_md_as_it_was(tmp_path, monkeypatch, capsys, rows):
    """report --jsonl of a mistyped path (or a file with nothing to report) replaced the committed section with an
    empty one, exit 0."""
    md = tmp_path / "RESULTS.md"
    md.write_text(f"# R\n\n{bench_offpolicy.BEGIN}\nthe committed tables\n{bench_offpolicy.END}\n")
    monkeypatch.setattr(bench_offpolicy, "RESULTS_MD", md)
    path = tmp_path / "typo.jsonl"
    if rows is not None:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(SystemExit) as exc:
        bench_offpolicy.main(["report", "--jsonl", str(path)])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1 and str(path) in err, err
    assert "the committed tables" in md.read_text()


def test_the_section_names_the_jsonl_it_was_made_from(tmp_path):
    row = {"kind": "speed", "lib": "canter", "algo": "sac", "steps": 200, "transitions": 200, "seconds": 2.0,
           "sps": 100.0, "threads": 1, "seed": 1, "matmul_precision": "highest"}
    assert "Raw results: `benchmarks/offpolicy_results.jsonl`" in bench_offpolicy.build_section([row])
    text = bench_offpolicy.build_section([row], tmp_path / "smoke.jsonl")
    assert f"Raw results: `{tmp_path / 'smoke.jsonl'}`" in text and f"report --jsonl {tmp_path / 'smoke.jsonl'}`" in text


@pytest.mark.slow
def test_a_smoke_quality_segment_keeps_its_state_beside_its_jsonl(tmp_path, monkeypatch):
    """A smoke run (--jsonl) saved its --segment state in benchmarks/out/offpolicy-state/, where the next run of the
    same algorithm, env and seed without --jsonl (a full one, whose rows go to the committed file) resumed it."""
    monkeypatch.setattr(bench_offpolicy, "STATE_ROOT", tmp_path / "default-state")
    smoke = tmp_path / "smoke.jsonl"
    argv = ["quality", "sac", "Pendulum-v1", "--max-steps", "300", "--segment", "250", "--jsonl", str(smoke)]
    assert bench_offpolicy.main(argv) == 0
    assert not (tmp_path / "default-state").exists()
    assert (tmp_path / "smoke.jsonl.state" / "sac-Pendulum-v1-1" / "trainer.json").is_file()
    assert bench_offpolicy.main(argv) == 0  # the second call resumes it and finishes
    assert [json.loads(line)["kind"] for line in smoke.read_text().splitlines()] == ["segment", "quality"]
    assert json.loads(smoke.read_text().splitlines()[1])["segments"] == 2


def test_the_default_jsonl_given_by_name_keeps_the_default_state(tmp_path, monkeypatch):
    """quality --segment --jsonl benchmarks/offpolicy_results.jsonl (the default file, named) kept its state in
    benchmarks/offpolicy_results.jsonl.state/, in the committed tree, and did not resume a run that the same command
    without --jsonl had started in benchmarks/out/offpolicy-state/."""
    monkeypatch.chdir(Path(bench_offpolicy.__file__).parent.parent)
    default = bench_offpolicy._state_dir("sac", "Pendulum-v1", 1)
    for named in (bench_offpolicy.RESULTS_JSONL, Path("benchmarks/offpolicy_results.jsonl")):
        assert bench_offpolicy._state_dir("sac", "Pendulum-v1", 1, named) == default
    assert bench_offpolicy._state_dir("sac", "Pendulum-v1", 1, tmp_path / "smoke.jsonl") == (
        tmp_path / "smoke.jsonl.state" / "sac-Pendulum-v1-1")


@pytest.mark.parametrize("cmd", [["speed"], ["quality", "sac", "Pendulum-v1"]])
def test_a_jsonl_that_cannot_be_appended_to_is_refused_before_the_runs(tmp_path, capsys, monkeypatch, cmd):
    """speed / quality --jsonl DIR/x.jsonl (a folder that does not exist) ran (a quality run for hours) and then lost
    its result to a FileNotFoundError traceback, where bench_atari and onpolicy_quality check their --jsonl first."""
    monkeypatch.setattr(bench_offpolicy, "require_sb3", lambda: None)
    for run in ("run_speed", "run_quality"):
        monkeypatch.setattr(bench_offpolicy, run, lambda *a: pytest.fail("a run started"))
    for bad in (tmp_path / "missing" / "x.jsonl", tmp_path):
        with pytest.raises(SystemExit) as exc:
            bench_offpolicy.main([*cmd, "--jsonl", str(bad)])
        err = capsys.readouterr().err.strip()
        assert exc.value.code == 2 and len(err.splitlines()) == 1 and f"--jsonl {bad}" in err, err


def test_a_report_from_the_default_jsonl_named_is_the_default_report(tmp_path, monkeypatch, capsys):
    """report --jsonl naming the committed file (as /abs/path/benchmarks/offpolicy_results.jsonl, say) wrote that path,
    this machine's, into RESULTS.md's section, where report without --jsonl writes the same section with the repo's."""
    monkeypatch.chdir(Path(bench_offpolicy.__file__).parent.parent)
    sections = []
    for argv in ([], ["--jsonl", str(bench_offpolicy.RESULTS_JSONL)], ["--jsonl", "benchmarks/offpolicy_results.jsonl"]):
        md = tmp_path / f"RESULTS{len(sections)}.md"
        monkeypatch.setattr(bench_offpolicy, "RESULTS_MD", md)
        assert bench_offpolicy.main(["report", *argv]) == 0
        sections.append(md.read_text())
    capsys.readouterr()
    assert sections[1] == sections[0] and sections[2] == sections[0]
    assert "Raw results: `benchmarks/offpolicy_results.jsonl`" in sections[0]
