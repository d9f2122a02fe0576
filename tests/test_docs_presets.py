"""The shipped-preset tables of docs/algorithms/*.md say what the presets resolve to.

A table headed `| Run key | Value | Hyperparameter | Value |` after a line naming
`canter/configs/ALGO/ENV.yaml` lists pairs such as `| `n_envs` | 16 |` or
`| `gamma` / `gae_lambda` | 0.99 / 0.95 |`; each value must be the one `resolve_config(ALGO, ENV)`
gives (a note in parentheses after a value is ignored). Cheap: no env is built.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from canter.config import resolve_config, resolved_dict

DOCS = Path(__file__).resolve().parent.parent / "docs" / "algorithms"
PRESET = re.compile(r"`canter/configs/(\w+)/([\w.-]+)\.yaml`")
HEADER = "| Run key | Value | Hyperparameter | Value |"


def _tables(text: str) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(algo, env, [(key, shown value), ...]) for each preset table of a page."""
    out, preset, lines = [], None, text.splitlines()
    for i, line in enumerate(lines):
        if PRESET.search(line):
            preset = PRESET.search(line).groups()
        if line.strip() != HEADER or preset is None:
            continue
        pairs = []
        for row in lines[i + 2:]:
            if not row.startswith("|"):
                break
            cells = [c.strip() for c in row.strip().strip("|").split("|")]
            for names, values in zip(cells[0::2], cells[1::2]):
                keys = re.findall(r"`(\w+)`", names)
                shown = [v.strip() for v in re.sub(r"\(.*?\)", "", values).split(" / ")] if keys else []
                assert len(keys) == len(shown), f"{row}: {len(keys)} keys, {len(shown)} values"
                pairs += zip(keys, shown)
        out.append((*preset, pairs))
    return out


def _same(shown: str, actual: Any) -> bool:
    value = yaml.safe_load(shown)
    if isinstance(actual, (int, float)) and not isinstance(actual, bool) and isinstance(value, (int, float)):
        return float(value) == float(actual)
    return value == actual


PAGES = sorted(p.stem for p in DOCS.glob("*.md") if HEADER in p.read_text())


@pytest.mark.parametrize("page", PAGES)
def test_preset_tables_match_the_presets(page: str) -> None:
    tables = _tables((DOCS / f"{page}.md").read_text())
    assert tables, f"{page}.md has a preset table without a canter/configs/ALGO/ENV.yaml line before it"
    wrong = []
    for algo, env, pairs in tables:
        resolved = resolved_dict(*resolve_config(algo, env))
        for key, shown in pairs:
            actual = resolved[key] if key in resolved else resolved["hparams"].get(key, "<missing>")
            if not _same(shown, actual):
                wrong.append(f"{algo}/{env} {key}: page says {shown}, preset resolves to {actual}")
    assert wrong == []


def test_a_wrong_preset_value_is_caught() -> None:
    page = f"`canter/configs/ppo/CartPole-v1.yaml`:\n\n{HEADER}\n|---|---|---|---|\n| `n_envs` | 3 | `lr` / `gamma` | 1 / 0.99 |\n"
    assert _tables(page) == [("ppo", "CartPole-v1", [("n_envs", "3"), ("lr", "1"), ("gamma", "0.99")])]
    assert not _same("3", 16) and _same("0.99", 0.99) and _same("[256, 256]", [256, 256])
