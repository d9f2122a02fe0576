"""benchmarks/pong_learning_curve.py wrote its figure to the committed benchmarks/pong_ppo_1h.png whatever the run:
--png PATH puts it elsewhere, and a run that is not Pong's is refused while the committed figure or section is the
target."""
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "benchmarks"))
import pong_learning_curve  # noqa: E402


def _run(tmp_path: Path, env: str) -> Path:
    """A run directory of two finished training episodes on ``env``."""
    run = tmp_path / "run"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(f"algo: ppo\nenv: {env}\nseed: 1\n")
    pq.write_table(pa.table({"step": [600.0, 1200.0], "wall_time": [1.0, 2.0], "episode_return": [-21.0, -20.0],
                             "rolling_return": [-21.0, -20.5]}), run / "history.parquet")
    return run


@pytest.fixture
def committed(monkeypatch, tmp_path):
    """The script's folder (its committed figure and RESULTS.md) in ``tmp_path / 'bench'``."""
    here = tmp_path / "bench"
    here.mkdir()
    (here / "pong_ppo_1h.png").write_bytes(b"committed")
    monkeypatch.setattr(pong_learning_curve, "HERE", here)
    return here


def test_a_run_on_another_env_is_refused_for_the_committed_figure(capsys, tmp_path, committed):
    """A CartPole run (or any trial) replaced the committed Pong figure."""
    out = tmp_path / "R.md"
    with pytest.raises(SystemExit) as e:
        pong_learning_curve.main([str(_run(tmp_path, "CartPole-v1")), "--out", str(out)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert "a run on CartPole-v1, not Pong" in err and "give --png PATH" in err and "--out FILE" not in err
    assert (committed / "pong_ppo_1h.png").read_bytes() == b"committed" and not out.exists()


def test_png_puts_the_figure_elsewhere(capsys, tmp_path, committed):
    """--png PATH: the figure goes there (a run on any env), the committed one stays, and the section links it from --out's folder."""
    out, png = tmp_path / "R.md", tmp_path / "figs" / "trial.png"
    png.parent.mkdir()
    assert pong_learning_curve.main([str(_run(tmp_path, "CartPole-v1")), "--out", str(out), "--png", str(png)]) == 0
    assert png.read_bytes().startswith(b"\x89PNG") and "![PPO Pong learning curve](figs/trial.png)" in out.read_text()
    assert (committed / "pong_ppo_1h.png").read_bytes() == b"committed"
    capsys.readouterr()


def test_png_naming_a_directory_is_refused_in_one_line(capsys, tmp_path, committed):
    """--png DIR was an IsADirectoryError traceback after the figure was drawn."""
    out, folder = tmp_path / "R.md", tmp_path / "figs"
    folder.mkdir()
    with pytest.raises(SystemExit) as e:
        pong_learning_curve.main([str(_run(tmp_path, "PongNoFrameskip-v4")), "--out", str(out), "--png", str(folder)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and len(err.strip().splitlines()) == 1 and f"--png: {folder} is a directory" in err, err
    assert not out.exists() and list(folder.iterdir()) == []
