"""Helpers every benchmark script shares: its own section of ``RESULTS.md``, and timing canter's
evaluations so they can be subtracted from a training loop's time."""
from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, NoReturn


def tagged_json(stdout: str, tag: str) -> dict:
    """The JSON object on the last line of a worker's ``stdout`` that starts with ``tag``."""
    line = next(line for line in reversed(stdout.splitlines()) if line.startswith(tag))
    return json.loads(line[len(tag):])


def input_error(message: str) -> NoReturn:
    """Exit with code 2 and ``message`` on one line of stderr (bad flags or input files)."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


class BenchParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (``PROG: error: ...; see --help``) and exit code 2,
    without argparse's usage block; its subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:  # noqa: D102
        input_error(f"{self.prog}: {message}; see {self.prog} --help")


def _whole(text: str) -> int:
    """``text`` read as a whole number, else argparse's one-line error."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def positive_int(text: str) -> int:
    """An ``argparse`` type: a whole number of at least 1."""
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def seed_int(text: str) -> int:
    """An ``argparse`` type: a seed both libraries take, a whole number from 0 to 2**32 - 1."""
    value = _whole(text)
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"a seed is between 0 and 2**32 - 1, got {value}")
    return value


def seconds_float(text: str) -> float:
    """An ``argparse`` type: a finite number of seconds (or milliseconds), 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= value < float("inf"):  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be a finite number of at least 0, got {text}")
    return value


def positive_seconds(text: str) -> float:
    """An ``argparse`` type: a finite number of seconds above 0 (a window that measures something)."""
    value = seconds_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def one_line_errors(main: Callable[..., int]) -> Callable[..., int]:
    """Wrap a script's ``main``: a :class:`canter.errors.CanterError` (an unknown algorithm or env, a bad
    hyperparameter) ends it with its one-line message and exit code 2 instead of a traceback."""

    @functools.wraps(main)
    def wrapped(*args: Any, **kwargs: Any) -> int:
        from canter.errors import CanterError

        try:
            return main(*args, **kwargs)
        except CanterError as exc:
            input_error(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)

    return wrapped


def read_jsonl(path: str | Path, keys: tuple[str, ...] = ()) -> list[dict]:
    """The JSON objects of a results file, one a line (blank lines skipped); a missing file, a line that
    is not a JSON object or one without all of ``keys`` (another script's results file, say) is a one-line
    error (exit code 2) naming the file and the line."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        input_error(f"cannot read the results file {path}: {exc.strerror or exc}")
    numbered = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                numbered.append((number, json.loads(line)))
            except json.JSONDecodeError as exc:
                input_error(f"{path}, line {number}: not a JSON object ({exc.msg})")
    for number, row in numbered:  # once every line is JSON: a line of other fields is a row of another script
        if not isinstance(row, dict):
            input_error(f"{path}, line {number}: not a JSON object (a JSON {type(row).__name__})")
        missing = [k for k in keys if k not in row]
        if missing:
            input_error(f"{path}, line {number}: no {', '.join(map(repr, missing))}, which this script's results "
                        "have (another script's results file?)")
    return [row for _, row in numbered]


def check_appendable(path: str | Path, flag: str = "--jsonl") -> None:
    """A one-line error (exit code 2) unless results can be appended to ``path`` (its folder exists and it, or
    the folder where it is missing, is writable): checked before a run, whose result would be lost at the end."""
    path = Path(path)
    if path.is_dir():
        problem = "is a directory"
    elif not path.exists() and not path.parent.is_dir():
        problem = f"is in a folder that does not exist ({path.parent})"
    elif not os.access(path if path.exists() else path.parent, os.W_OK):
        problem = "is not writable here"
    else:
        return
    input_error(f"{flag} {path} {problem}: nothing run, as its result could not be recorded")


def append_jsonl(path: str | Path, rows: list[dict]) -> None:
    """Append ``rows`` to a results file, one JSON object a line, starting on a new line even where the
    file's last line was left unterminated (an interrupted write), so that no earlier row is joined to them."""
    path = Path(path)
    text = "".join(json.dumps(r) + "\n" for r in rows)
    with path.open("a+b") as f:
        if f.seek(0, 2) > 0:
            f.seek(-1, 2)
            if f.read(1) != b"\n":
                text = "\n" + text
        f.write(text.encode())


def require_sb3() -> None:
    """Exit with code 2 and a one-line message when Stable-Baselines3 (the ``bench`` extra) is missing,
    before any run starts or any results file is touched."""
    if importlib.util.find_spec("stable_baselines3") is None:
        print("error: this benchmark runs Stable-Baselines3 side by side with canter, and it is not installed; "
              "run: pip install -c constraints.txt -e \".[bench]\"", file=sys.stderr)
        raise SystemExit(2)


def check_section_markers(path: str | Path, start: str, end: str) -> str:
    """The text of ``path`` ('' where there is none), whose section :func:`replace_section` can replace or append;
    a file with one of the markers ``start`` and ``end`` and not the other, or the end before the start, or a path that
    cannot be read (a directory), or one under a file (its folder cannot be made) is refused in one line (exit 2; a
    script checks its ``--out`` so before it runs)."""
    path = Path(path)
    try:  # a directory given as --out was an IsADirectoryError traceback
        text = path.read_text() if path.exists() else ""
    except OSError as exc:
        input_error(f"cannot read {path}, whose section would be written: {exc.strerror or exc}; give a file")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:  # the folder replace_section would make
        folder = folder.parent
    if not folder.is_dir():  # FILE/RESULTS.md: mkdir's traceback after the runs
        input_error(f"cannot write {path}: {folder} is not a folder; give a file in a folder")
    if (start in text) != (end in text):
        present, missing = (start, end) if start in text else (end, start)
        input_error(f"{path} has the marker {present} but not {missing}; add it where the section ends (or take the "
                    f"other out), then run again")
    if start in text and text.index(end) < text.index(start):
        input_error(f"{path} has the marker {end} before {start}; put it after, then run again")
    return text


def replace_section(path: str | Path, section: str, start: str, end: str) -> None:
    """Put ``section`` (which begins with ``start`` and ends with ``end``) in place of the text between
    those markers in ``path``, or append it; the rest of the file is kept, the write is atomic. A file with one
    marker and not the other (or the end before the start) is refused in one line (exit 2), unchanged: a second
    section was appended after the lone marker."""
    path = Path(path)
    text = check_section_markers(path, start, end)
    block = section.strip("\n") + "\n"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        tail = rest.split(end, 1)[1].lstrip("\n")
        text = head + block + ("\n" + tail if tail else "")
    else:
        text = (text.rstrip("\n") + "\n\n" if text else "") + block
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def write_section(path: str | Path, body: str, start: str, end: str) -> None:
    """:func:`replace_section` with ``body`` wrapped in the markers."""
    replace_section(path, f"{start}\n{body.strip(chr(10))}\n{end}\n", start, end)


def time_evaluations(trainer: Any, intervals: list[tuple[float, float]] | None = None) -> list[float]:
    """Wrap ``trainer.evaluate`` so that its seconds add up in the returned one-element list, and
    each evaluation's ``time.monotonic()`` start and end are appended to ``intervals`` when given.

    An instance attribute: it only measures and changes nothing the trainer does.
    """
    spent = [0.0]
    evaluate = trainer.evaluate

    def timed_evaluate() -> Any:
        t, m = time.perf_counter(), time.monotonic()
        try:
            return evaluate()
        finally:
            spent[0] += time.perf_counter() - t
            if intervals is not None:
                intervals.append((m, time.monotonic()))

    trainer.evaluate = timed_evaluate
    return spent


def timed_loop(trainer: Any, progress: Callable[[float], None] | None = None) -> dict[str, Any]:
    """Run ``trainer`` to its end, timing it: ``loop_s`` (seconds of the loop) and ``eval_s`` (of
    them, evaluating), ``loop_mono`` and ``eval_mono`` (the loop's and each evaluation's
    ``time.monotonic()`` start and end, for :func:`_interleave.active_seconds`) and ``last`` (its
    last record). ``progress`` gets the fraction of ``max_steps`` done after every iteration."""
    eval_mono: list[tuple[float, float]] = []
    eval_s = time_evaluations(trainer, eval_mono)
    total = trainer.run.max_steps
    t0, m0 = time.perf_counter(), time.monotonic()
    last = None
    for last in trainer():
        if progress is not None:
            progress(trainer.step / total)
    return {"loop_s": time.perf_counter() - t0, "eval_s": eval_s[0], "loop_mono": [m0, time.monotonic()],
            "eval_mono": eval_mono, "last": last}


def time_training(trainer: Any) -> float:
    """Run ``trainer`` to its end; seconds of its loop without the time spent evaluating."""
    timed = timed_loop(trainer)
    return timed["loop_s"] - timed["eval_s"]


def sb3_timed_learn(model: Any, total: int, callback: Any) -> dict[str, Any]:
    """``model.learn(total, callback)`` timed as :func:`timed_loop` times canter's loop: ``loop_s``
    and ``loop_mono`` (SB3 evaluates inside its callbacks, so nothing is left out here)."""
    t0, m0 = time.perf_counter(), time.monotonic()
    model.learn(total_timesteps=total, callback=callback)
    return {"loop_s": time.perf_counter() - t0, "loop_mono": [m0, time.monotonic()]}


def sb3_progress_callback(progress: Callable[[float], None], total: int) -> Any:
    """A Stable-Baselines3 callback that reports the fraction of ``total`` env steps done after
    every vector step (for interleaved runs)."""
    from stable_baselines3.common.callbacks import BaseCallback

    class ReportProgress(BaseCallback):
        def _on_step(self) -> bool:
            progress(self.num_timesteps / total)
            return True

    return ReportProgress()


def real_transitions(trainer: Any) -> int:
    """Env steps of a finished single-process canter run that were real transitions.

    canter's vector envs autoreset in gymnasium's NEXT_STEP mode: the step after an episode's end
    only resets that env (no transition; ``valid`` False), and ``trainer.step`` counts it, while
    Stable-Baselines3's VecEnvs reset inside the step that ends the episode, so every step SB3
    counts is a transition. Each finished episode is followed by one reset-only step, except those
    that ended on the run's very last step, so that count is subtracted (checked against a count of
    ``valid`` rows: exact for PPO and DQN on CartPole). Env-steps/s are reported from this number.
    """
    last_step_ends = len(getattr(trainer.env, "finished_envs", ()))
    return int(trainer.step - (trainer.episode_count - last_step_ends))


def run_dir_transitions(run_dir: str | Path) -> int:
    """:func:`real_transitions` of a finished run that ``canter train`` wrote to ``run_dir``: its steps less
    one reset-only step per finished episode, except the episodes that ended on the run's very last
    vector step (``history.parquet`` rows at the summary's step count)."""
    import pyarrow.parquet as pq

    run_dir = Path(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    ends = pq.read_table(run_dir / "history.parquet", columns=["step"]).column("step").to_pylist()
    return int(summary["steps"] - summary["episodes"] + sum(step == summary["steps"] for step in ends))
