"""``canter train --help``'s --resume line is docs/training-control.md's resume usage: it still said
``[--max-seconds S]`` after 9278ff24 made the resume's --max-seconds take null (its own parser and the docs say
``S|null``)."""
from __future__ import annotations

import re
from pathlib import Path

from canter.cli_parsers import _train_parser

DOCS = Path(__file__).resolve().parent.parent / "docs" / "training-control.md"


def test_the_resume_help_is_the_documented_usage():
    resume = next(a for a in _train_parser("canter train", None)._actions if "--resume" in a.option_strings)
    in_help = re.search(r"\((canter train --resume .*)\)$", resume.help).group(1)
    documented = re.search(r"^`(canter train --resume RUN_DIR [^`]*)`$", DOCS.read_text(), re.M).group(1)
    assert in_help == documented
