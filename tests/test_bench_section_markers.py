"""replace_section (every benchmark's RESULTS.md section) appended a second block when a file had only one of its two
markers (one deleted by hand, a merge): the file then held two begin markers and the next report replaced the first
block only. It is refused in one line (exit 2) naming the file and the missing marker, the file unchanged; the
scripts that run for minutes check their --out before they run."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
import _common  # noqa: E402

START, END = "<!-- x:begin -->", "<!-- x:end -->"
SECTION = f"{START}\nnew\n{END}\n"


def _refused(capsys, path: Path, *needles: str) -> None:
    before = path.read_text()
    with pytest.raises(SystemExit) as exc:
        _common.replace_section(path, SECTION, START, END)
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1 and str(path) in err, err
    assert all(n in err for n in needles), err
    assert path.read_text() == before


@pytest.mark.parametrize("text, present, missing", [(f"# R\n\n{START}\nold\n", START, END),
                                                    (f"# R\n\nold\n{END}\n\nmore\n", END, START)])
def test_a_file_with_one_marker_is_refused_unchanged(tmp_path, capsys, text, present, missing):
    path = tmp_path / "RESULTS.md"
    path.write_text(text)
    _refused(capsys, path, f"has the marker {present} but not {missing}")


def test_an_end_marker_before_the_start_is_refused(tmp_path, capsys):
    path = tmp_path / "RESULTS.md"
    path.write_text(f"# R\n{END}\nold\n{START}\n")
    _refused(capsys, path, f"{END} before {START}")


def test_both_markers_or_none_still_work(tmp_path):
    path = tmp_path / "RESULTS.md"
    path.write_text(f"# R\n\n{START}\nold\n{END}\n\ntail\n")
    _common.replace_section(path, SECTION, START, END)
    assert path.read_text() == f"# R\n\n{SECTION}\ntail\n"
    other = tmp_path / "other.md"
    other.write_text("# O\n")
    _common.replace_section(other, SECTION, START, END)
    assert other.read_text() == f"# O\n\n{SECTION}"


def test_bench_a2c_checks_its_out_before_it_runs(tmp_path, capsys, monkeypatch):
    import bench_a2c

    path = tmp_path / "RESULTS.md"
    path.write_text(f"# R\n{bench_a2c.START}\nold\n")
    monkeypatch.setattr(bench_a2c, "require_sb3", lambda: None)
    monkeypatch.setattr(bench_a2c, "run_worker", lambda *a: pytest.fail("a run started"))
    with pytest.raises(SystemExit) as exc:
        bench_a2c.main(["--quick", "--out", str(path)])
    assert exc.value.code == 2 and f"but not {bench_a2c.END}" in capsys.readouterr().err


def test_an_out_that_is_a_directory_is_refused_before_the_runs(tmp_path, capsys, monkeypatch):
    """bench_a2c --out DIR was an IsADirectoryError traceback (before 2aac03e1's check, after minutes of runs)."""
    import bench_a2c

    monkeypatch.setattr(bench_a2c, "require_sb3", lambda: None)
    monkeypatch.setattr(bench_a2c, "run_worker", lambda *a: pytest.fail("a run started"))
    with pytest.raises(SystemExit) as exc:
        bench_a2c.main(["--quick", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1 and f"cannot read {tmp_path}" in err, err


def test_an_out_in_a_folder_that_cannot_be_made_is_refused_before_the_runs(tmp_path, capsys, monkeypatch):
    """--out FILE/RESULTS.md (under a file, not a folder) passed the check (nothing to read) and the runs went on,
    to a NotADirectoryError traceback from replace_section's mkdir after them."""
    import bench_a2c

    (tmp_path / "notes").write_text("a file\n")
    out = tmp_path / "notes" / "sub" / "RESULTS.md"
    monkeypatch.setattr(bench_a2c, "require_sb3", lambda: None)
    monkeypatch.setattr(bench_a2c, "run_worker", lambda *a: pytest.fail("a run started"))
    with pytest.raises(SystemExit) as exc:
        bench_a2c.main(["--quick", "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and len(err.splitlines()) == 1 and f"{tmp_path / 'notes'} is not a folder" in err, err
