"""canter plot's --size and --out given values argparse or the format check misread, and what --out may replace."""
from __future__ import annotations

import pytest

from canter.cli import main


@pytest.mark.parametrize("args", [["--size", "-5x100"], ["--size=-5x100"], ["--size", "-800x500", "--out", "c.svg"]])
def test_a_negative_size_reaches_the_size_check(args, tmp_path, capsys, monkeypatch):
    """``--size -5x100`` got argparse's "argument --size: expected one argument" (a value starting with '-'
    looked like an option); only ``--size=-5x100`` reached canter's size check."""
    monkeypatch.chdir(tmp_path)
    assert main(["plot", "no-run", *args]) == 2
    err = capsys.readouterr().err
    assert "--size must be WIDTHxHEIGHT" in err and "-" in err.split("got")[1] and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_a_size_flag_followed_by_another_flag_is_still_a_missing_value(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["plot", "no-run", "--size", "--out", "x.png"]) == 2
    assert "argument --size: expected one argument" in capsys.readouterr().err


@pytest.mark.parametrize("out, message", [
    (".png", "--out '.png' has no file name before '.png'; give one, e.g. curves.png"),
    ("figs/.SVG", "has no file name before '.SVG'; give one, e.g. figs/curves.SVG"),
    ("curves", "--out 'curves' has no image suffix; end it in .png, .svg or .pdf, e.g. curves.png"),
    (".jpg", "--out '.jpg' has no image suffix; end it in .png, .svg or .pdf, e.g. curves.png"),  # was .jpg.png
    ("figs/curves.", "has no image suffix; end it in .png, .svg or .pdf, e.g. figs/curves.png"),  # was curves..png
    (".", "--out '.' is a directory; give an image file name"),
])
def test_an_out_without_a_format_suffix_is_named_clearly(out, message, tmp_path, capsys, monkeypatch):
    """``--out .png`` (a hidden file's name, no suffix) said "unknown image format '(none)'", and so did a
    directory or a name without a suffix."""
    monkeypatch.chdir(tmp_path)
    assert main(["plot", "no-run", "--out", out]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


TINY_PPO = ["--max-steps", "256", "--n-envs", "2", "--set", "n_steps=64", "--set", "n_epochs=1",
            "--eval-episodes", "1", "--quiet"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs") / "ppo"
    assert main(["train", "ppo", "--env", "CartPole-v1", "--run-dir", str(d), *TINY_PPO]) == 0
    import matplotlib.backends.backend_pdf  # noqa: F401  # imported once here, not in the first test's time
    import matplotlib.backends.backend_svg  # noqa: F401
    return str(d)


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_plot_replaces_its_own_image_but_no_other_file(suffix, run, tmp_path, capsys):
    """Any existing file with an image suffix was replaced (a photo, a figure of one's own, a paper's PDF);
    report replaced only an earlier report. Now only an image canter plot wrote (its creator in the
    image's metadata) is replaced, and anything else is refused in one line and left as it was."""
    from matplotlib.figure import Figure

    from canter.tools.plot import is_canter_plot

    out = tmp_path / f"curves{suffix}"
    assert main(["plot", run, "--out", str(out), "--size", "400x300"]) == 0 and is_canter_plot(out)
    first = out.read_bytes()
    assert main(["plot", run, "--out", str(out), "--size", "400x320", "--title", "again"]) == 0
    assert out.read_bytes() != first and is_canter_plot(out)  # its own earlier plot: replaced
    capsys.readouterr()
    foreign = tmp_path / f"mine{suffix}"
    fig = Figure(figsize=(2, 2))
    fig.add_subplot().plot([0, 1])
    fig.savefig(foreign, format=suffix[1:])  # matplotlib's own creator, not canter plot's
    text = tmp_path / f"notes{suffix}"
    text.write_text("canter plot\n")
    for path in (foreign, text):
        before = path.read_bytes()
        assert main(["plot", run, "--out", str(path)]) == 2
        err = capsys.readouterr().err
        assert "exists and is not an image canter plot wrote; it is not overwritten" in err
        assert len(err.strip().splitlines()) == 1 and path.read_bytes() == before
