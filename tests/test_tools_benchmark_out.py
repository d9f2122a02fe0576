"""canter benchmark --out: a folder that is neither new, empty nor an earlier benchmark's OUT is refused."""
from __future__ import annotations

import pytest

from canter.cli import main
from support import snapshot

SPEC = ("seeds: 1\nset: {max_steps: 64, n_envs: 2, n_steps: 32, batch_size: 64, eval_episodes: 1, eval_every: 0, "
        "checkpoint_every: 0, tensorboard: false}\nenvs: [CartPole-v1]\nalgos: [ppo]\n")


@pytest.mark.parametrize("files, needle", [
    ({"config.yaml": "algo: ppo\n", "summary.json": "{}", "checkpoints/last.json": "{}"},
     "is a canter run directory (it holds config.yaml)"),
    ({"study.db": "", "best.yaml": "algo: ppo\n"},
     "is not empty and not an earlier benchmark's OUT (it holds 'best.yaml' and 1 more)"),
    ({"runs/x/notes.txt": "mine", "README.md": "mine"}, "(it holds 'README.md')"),
    ({"runs": "a file named runs"}, "(it holds 'runs (a file)')"),
])
def test_benchmark_refuses_an_out_that_is_a_run_or_a_folder_of_ones_own(files, needle, tmp_path, capsys):
    """--out r1 (a run directory) got results.md, results.csv, benchmark.png and runs/ written into it, and so
    did any other folder without results files of its own (a tune output, a project)."""
    spec = tmp_path / "grid.yaml"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    for name, text in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    before = snapshot(out)
    assert main(["benchmark", str(spec), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
    assert snapshot(out) == before  # nothing written

    # an empty folder and an earlier benchmark's OUT are taken: test_tools_benchmark.py's
    # test_benchmark_refuses_an_out_holding_results_files_it_did_not_write runs both


def test_an_earlier_benchmark_out_with_a_killed_write_s_temp_file_is_still_taken(tmp_path):
    """A benchmark killed while writing results.md (atomic_write) leaves '.results.md.<random>.tmp' in OUT; the
    OUT check took it for a file of one's own and refused that benchmark's own OUT from then on."""
    from canter.errors import CanterError
    from canter.tools.benchmark import check_out_folder

    out = tmp_path / "out"
    (out / "runs").mkdir(parents=True)
    (out / "results.md").write_text("# Benchmark: grid.yaml\n")
    (out / ".results.md.k2j3_1ab.tmp").write_text("# Bench")
    check_out_folder(out)  # taken
    (out / ".notes.txt.k2j3_1ab.tmp").write_text("")  # not a results file's: a file of one's own
    with pytest.raises(CanterError, match=r"it holds '.notes.txt.k2j3_1ab.tmp'"):
        check_out_folder(out)
