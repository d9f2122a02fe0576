"""bench_offpolicy.py quality's resumable segments: a saved state is continued only by a run of its own budget,
and it is gone once that run is finished and recorded."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
import bench_offpolicy  # noqa: E402


@pytest.fixture
def scratch(monkeypatch, tmp_path):
    """Results file and state directory of the script, in ``tmp_path``."""
    monkeypatch.setattr(bench_offpolicy, "RESULTS_JSONL", tmp_path / "results.jsonl")
    monkeypatch.setattr(bench_offpolicy, "STATE_ROOT", tmp_path / "state")
    return tmp_path


def test_a_segment_saved_at_another_budget_is_not_continued(capsys, scratch):
    """After the README's smoke check (quality sac Pendulum-v1 --max-steps 400 --segment 250, twice), a run of seed 1
    at another budget resumed the smoke run's state (reproduced: --max-steps 1000 --segment 300 saved its first
    segment at step 550, the smoke run's 250 steps and replay buffer in it)."""
    state = bench_offpolicy._state_dir("sac", "Pendulum-v1", 1)
    state.mkdir(parents=True)
    (state / "trainer.json").write_text(json.dumps({"max_steps": 400, "step": 250, "segment": 1}))
    with pytest.raises(SystemExit) as exc:
        bench_offpolicy.main(["quality", "sac", "Pendulum-v1", "--max-steps", "1000", "--segment", "300"])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1 and "400" in err and "--max-steps 400" in err, err
    assert (state / "trainer.json").exists() and not (scratch / "results.jsonl").exists()


@pytest.mark.slow
def test_a_finished_segmented_run_leaves_no_state_to_resume(scratch):
    """The state of a finished segmented run stayed, so the next segmented run of that algorithm, env and seed
    continued it (and a rerun at the same budget finished at once on the old run's replay and weights)."""
    argv = ["quality", "sac", "Pendulum-v1", "--max-steps", "150", "--segment", "100"]
    state = bench_offpolicy._state_dir("sac", "Pendulum-v1", 1)
    assert bench_offpolicy.main(argv) == 0 and (state / "trainer.json").exists()
    assert bench_offpolicy.main(argv) == 0 and not state.exists()
    rows = [json.loads(line) for line in (scratch / "results.jsonl").read_text().splitlines()]
    assert [r["kind"] for r in rows] == ["segment", "quality"] and rows[1]["steps"] == 150


@pytest.mark.slow  # four short runs (~5 s)
def test_a_finished_smoke_run_leaves_no_empty_state_folder(scratch):
    """With --jsonl FILE the finished run removed FILE.state/sac-Pendulum-v1-1 but left FILE.state/ behind, empty;
    a folder still holding another run's state stays."""
    smoke = scratch / "smoke.jsonl"
    argv = ["quality", "sac", "Pendulum-v1", "--max-steps", "150", "--segment", "100", "--jsonl", str(smoke)]
    for other in (True, False):
        assert bench_offpolicy.main(argv) == 0 and (scratch / "smoke.jsonl.state" / "sac-Pendulum-v1-1").is_dir()
        if other:  # another algorithm's run under way beside it
            (scratch / "smoke.jsonl.state" / "td3-Pendulum-v1-1").mkdir()
        assert bench_offpolicy.main(argv) == 0
        assert not (scratch / "smoke.jsonl.state" / "sac-Pendulum-v1-1").exists()
        assert (scratch / "smoke.jsonl.state").exists() == other
        if other:
            (scratch / "smoke.jsonl.state" / "td3-Pendulum-v1-1").rmdir()
    assert not (scratch / "state").exists()
