"""benchmarks/_interleave.py: processes measured in turns, and the running time credited to each."""
import json
import sys
import textwrap
from pathlib import Path

import pytest

BENCH = Path(__file__).parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))
import _interleave  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGSTOP / SIGCONT are POSIX")

# A child that busy-works for WORK seconds of its own running time, reporting its progress, and
# prints the monotonic instants it started and ended and every gap (>= 2 ms) it saw: time it was stopped.
CHILD = textwrap.dedent(f"""
    import json, sys, time
    sys.path.insert(0, {str(BENCH)!r})
    from _interleave import ProgressReporter
    work, reporter = float(sys.argv[1]), ProgressReporter()
    start = last = time.monotonic()
    done, gaps = 0.0, []
    while done < work:
        now = time.monotonic()
        if now - last < 0.002:
            done += now - last
        else:
            gaps.append((last, now))
        last = now
        reporter.update(done / work)
    print(json.dumps({{"start": start, "end": last, "gaps": gaps}}))
""")


def test_active_seconds_counts_the_slices_inside_the_window_less_the_excluded_parts():
    slices = [(1.0, 3.0), (5.0, 6.0), (9.0, 12.0)]
    assert _interleave.overlap((0.0, 10.0), slices) == pytest.approx(4.0)  # 2 + 1 + the first 1 of (9, 12)
    # excluded (2, 5.5) covers 1 s of the first slice and 0.5 s of the second
    assert _interleave.active_seconds((0.0, 10.0), slices, [(2.0, 5.5)]) == pytest.approx(2.5)
    assert _interleave.active_seconds((3.0, 5.0), slices) == 0.0


def test_progress_reporter_without_a_file_does_nothing(monkeypatch):
    monkeypatch.delenv(_interleave.PROGRESS_ENV, raising=False)
    _interleave.ProgressReporter().update(0.5)  # no file named: a no-op, no error


def test_processes_take_turns_and_the_slower_one_gets_longer_slices(tmp_path):
    """Two children, one with three times the work: their turns never overlap, each child ran
    only inside its slices (they cover all of its own count of running time), and the slower
    child's slices grow so that both finish close together."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    outs = _interleave.run_interleaved([[sys.executable, str(script), "0.5"], [sys.executable, str(script), "1.5"]],
                                       slice_s=0.05)
    (out_a, slices_a), (out_b, slices_b) = outs
    assert all(e <= s2 or e2 <= s for s, e in slices_a for s2, e2 in slices_b)  # never both running
    for out, slices, work in ((out_a, slices_a, 0.5), (out_b, slices_b, 1.5)):
        child = json.loads(out.strip().splitlines()[-1])
        ran = _interleave.active_seconds((child["start"], child["end"]), slices)
        # inside its turns the child either worked or was held up by other programs on the machine
        # (gaps it saw that fall inside its own slices; on a loaded host they can exceed its work)
        held_up = sum(_interleave.overlap(tuple(gap), slices) for gap in child["gaps"])
        assert work * 0.98 <= ran <= work + held_up + 0.1
        stopped = sum(e - s for s, e in child["gaps"])  # what the child saw of the others' turns
        others = child["end"] - child["start"] - ran
        assert others * 0.98 <= stopped <= others + held_up + 0.1
    late_a = sorted(e - s for s, e in slices_a[-5:])
    late_b = sorted(e - s for s, e in slices_b[-5:])
    assert late_b[2] > 2 * late_a[2]  # ~3x: B advances through its budget a third as fast
    ends = [json.loads(o.strip().splitlines()[-1])["end"] for o, _ in outs]
    assert abs(ends[0] - ends[1]) < 1.0


def test_a_failing_process_raises_with_its_stderr_and_the_others_are_killed(tmp_path):
    ok, bad = tmp_path / "ok.py", tmp_path / "bad.py"
    ok.write_text("import time\nwhile True: time.sleep(0.01)\n")
    bad.write_text("import sys\nsys.exit('no such env: CartPol-v1')\n")
    with pytest.raises(RuntimeError, match="no such env: CartPol-v1"):
        _interleave.run_interleaved([[sys.executable, str(ok)], [sys.executable, str(bad)]], slice_s=0.05, timeout=30)
