"""Every flag that the documentation gives a ``canter`` command exists in that command's parser.

In README.md and docs/, each ``canter CMD ...`` in a code block or an inline code span is read up to the
end of its line (a trailing ``\\`` continues it, and in a code block so does an indented line of options);
every ``--flag`` (and ``-f``) written after it must be one that ``canter CMD --help`` lists. For
``canter train ALGO`` with a registered algorithm, its hyperparameter flags count too. Every ``--set KEY=...``
of ``canter train`` and ``canter tune`` names a run key or a hyperparameter (of ALGO where it is a registered
algorithm's name, else of any algorithm; ``hparams.KEY`` a hyperparameter). Cheap: the parsers are built from
their descriptions, no torch, no env.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from canter.builtins import algorithm_info, builtin_names
from canter.cli import _resume_parser, _train_parser
from canter.cli import main as cli_main
from canter.config import RunConfig, describe
from canter.errors import CanterError

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
COMMANDS = ("train", "eval", "play", "collect", "list", "tune", "plot", "benchmark", "report")
INVOCATION = re.compile(r"\bcanter (" + "|".join(COMMANDS) + r")\b([^`\n]*)")
FLAG = re.compile(r"(?<![\w\-./:])(--[a-z][a-z0-9-]*|-f)(?![\w-])")
SET_KEY = re.compile(r"""--set[ =]["']?([A-Za-z_][\w.]*)=""")


def _invocations(text: str) -> list[tuple[str, str, str]]:
    """(command, first word after it, the rest of the line) of each ``canter CMD ...`` in the page's code."""
    # in a code block, an indented line of options continues a synopsis (README's 'canter train ALGO ...')
    spans = [re.sub(r"\n\s+(?=\[|--)", " ", s) for s in re.findall(r"```.*?```", text, re.S)]
    inline = re.sub(r"```.*?```", "", text, flags=re.S)
    spans += [s.replace("\n", " ") for s in re.findall(r"(?<!`)`([^`]+)`(?!`)", inline)]
    out = []
    for span in spans:
        for match in INVOCATION.finditer(span.replace("\\\n", " ")):
            args = match.group(2).split("#", 1)[0]  # a shell comment is prose
            words = args.split()
            out.append((match.group(1), words[0] if words else "", args))
    return out


def _options(command: str, word: str) -> set[str]:
    """The option strings of ``canter COMMAND`` (``canter train WORD``'s hyperparameters where WORD names an
    algorithm)."""
    if command == "train" and word == "--resume":
        return {s for action in _resume_parser()._actions for s in action.option_strings}
    if command == "train":
        try:
            algorithm_info(word)
            parser = _train_parser("canter train", word)
        except CanterError:
            parser = _train_parser("canter train", None)
        return {s for action in parser._actions for s in action.option_strings}
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        cli_main([command, "--help"])
    return set(FLAG.findall(out.getvalue())) | {"--help"}


def _unknown(text: str) -> list[str]:
    """'canter CMD --flag' for each documented flag that the command does not take."""
    cache: dict[tuple[str, str], set[str]] = {}
    bad = []
    for command, word, args in _invocations(text):
        key = (command, word if command == "train" else "")
        if key not in cache:
            cache[key] = _options(*key)
        bad += [f"canter {command} {flag}" for flag in FLAG.findall(args) if flag not in cache[key]]
        if command in ("train", "tune"):
            bad += [f"canter {command} --set {name}" for name in SET_KEY.findall(args)
                    if not name.isupper() and not _settable(name, word)]  # KEY=VALUE is a placeholder
    return bad


def _hparams(algo: str) -> set[str]:
    """The hyperparameter names of ``algo``, or of every built-in algorithm where it names none."""
    try:
        return {h[0] for h in algorithm_info(algo)["hparams"]}
    except CanterError:
        return set().union(*(_hparams(name) for name in builtin_names("algorithm")))


def _settable(name: str, algo: str) -> bool:
    """Whether ``--set NAME=...`` names a run key or one of ``algo``'s hyperparameters."""
    if name.startswith("hparams."):
        return name.removeprefix("hparams.") in _hparams(algo)
    return name in {field for field, *_ in describe(RunConfig)} or name in _hparams(algo)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_documented_flags_exist(page: Path) -> None:
    assert _unknown(page.read_text()) == []


def test_an_unknown_flag_is_caught() -> None:
    text = ("```bash\ncanter train ppo --env CartPole-v1 --n-epochs 4 --lr-typo 1 \\\n    --max-step 5\n```\n"
            "Then `canter eval RUN --episodes 3 --jason`; `canter plot A --x time`  # --not-a-flag\n"
            "`canter train dqn --set her_goals=4 --set clip_range=0.1 --set hparams.seed=1 --set seed=1`\n")
    assert _unknown(text) == ["canter train --lr-typo", "canter train --max-step", "canter eval --jason",
                              "canter train --set clip_range", "canter train --set hparams.seed"]


def test_each_resume_synopsis_names_every_resume_option() -> None:
    """``canter train --help``'s line for ``--resume``, README's and training-control.md's synopses name every
    option that ``canter train --resume`` takes (the help line and training-control.md left out ``--dataset``,
    README ``--max-seconds`` and ``--quiet``)."""
    options = {s for action in _resume_parser()._actions for s in action.option_strings if s.startswith("--")}
    options -= {"--help"}
    help_line = next(a.help for a in _train_parser("canter train", None)._actions if "--resume" in a.option_strings)
    synopses = {"canter train --help": help_line}
    for page in (ROOT / "README.md", ROOT / "docs" / "training-control.md"):
        synopses[page.name] = next(line for line in page.read_text().splitlines()
                                   if re.search(r"canter train --resume RUN_DIR \[", line))
    missing = {where: sorted(options - set(FLAG.findall(text))) for where, text in synopses.items()}
    assert missing == {where: [] for where in synopses}
