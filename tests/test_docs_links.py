"""The documentation's cross-references point at things that exist.

Every relative Markdown link in README.md and docs/ names an existing file (and, with `#anchor`, a
heading of that page, slugged as GitHub does), and every repository path written in backticks
(`canter/...`, `tests/...`, `benchmarks/...`, `docs/...`) exists. Cheap: reads the pages only.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
# a repository path in backticks; placeholders in capitals (ALGO, ENV) and globs are skipped
CODE_PATH = re.compile(r"`((?:canter|tests|benchmarks|docs)/[A-Za-z0-9_./-]+\.(?:py|md|yaml|json))`")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    """The anchors of a page's headings (outside code blocks)."""
    out, fenced = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            out.add(_slug(line.lstrip("#")))
    return out


def _broken(page: Path) -> list[str]:
    text = page.read_text()
    bad = []
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"link {target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"link {target}: no heading #{anchor} in {dest.name}")
    for path in CODE_PATH.findall(text):
        if not any(part.isupper() for part in re.split(r"[/.]", path)) and not (ROOT / path).exists():
            bad.append(f"`{path}`: no such file in the repository")
    return bad


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_cross_references_exist(page: Path) -> None:
    assert _broken(page) == []


def test_a_broken_link_is_caught(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# A heading\n")
    page.write_text("[ok](other.md#a-heading) [gone](missing.md) [anchor](other.md#nope) `canter/nope.py`\n")
    assert _broken(page) == ["link missing.md: no such file", "link other.md#nope: no heading #nope in other.md",
                             "`canter/nope.py`: no such file in the repository"]
