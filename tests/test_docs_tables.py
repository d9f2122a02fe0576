"""The hyperparameter tables of docs/algorithms/*.md say what `canter train ALGO --help` says.

Each table (rows `| `name` | type | `default` | meaning |`) must match, name by name, the type and
default of one algorithm the page documents (a page may hold several tables: dqn.md has DQN's, C51's
and IQN's). The pages' other statements of defaults are checked too: an algorithm page's family, default model
and default n_envs; "`name` (default X)"-style prose for run keys and hyperparameters on every page; atari.md's
env_kwargs table and hindsight.md's options table. Cheap: it reads the pages and the Config dataclasses, no
training.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from canter.config import describe
from canter.registry import lookup, names

DOCS = Path(__file__).resolve().parent.parent / "docs" / "algorithms"
ROW = re.compile(r"^\| `([a-z_0-9]+)` \| ([^|]+) \| `([^`]*)` \|", re.M)
# pages whose stem is not an algorithm name
PAGE_ALGOS = {"dqn": ["dqn", "qrdqn", "rainbow", "c51", "iqn"], "offline": ["bc", "cql", "td3bc"],
              "trpo": ["trpo", "npg"]}


def _tables(text: str) -> list[list[tuple[str, str, str]]]:
    """The hyperparameter tables of a page: runs of consecutive matching rows."""
    tables, current = [], []
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            current.append((m.group(1), m.group(2).strip(), m.group(3)))
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return tables


def _shown(value: object) -> str:
    """A default as the pages write it (YAML-ish: true, null)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _mismatches(algo: str, table: list[tuple[str, str, str]]) -> list[str]:
    fields = {n: (t, _shown(d)) for n, t, d, _ in describe(lookup("algorithm", algo).Config)}
    out = []
    for name, type_, default in table:
        if name not in fields:
            out.append(f"{name}: not a field of {algo}")
        elif fields[name] != (type_, default):
            out.append(f"{name}: page says {type_} {default}, {algo} has {fields[name][0]} {fields[name][1]}")
    return out


@pytest.mark.parametrize("page", sorted(p.stem for p in DOCS.glob("*.md")))
def test_hyperparameter_tables_match_the_configs(page):
    algos = PAGE_ALGOS.get(page, [page])
    assert all(a in names("algorithm") for a in algos), algos
    for table in _tables((DOCS / f"{page}.md").read_text()):
        if not any(name in {n for n, *_ in describe(lookup("algorithm", a).Config)} for a in algos
                   for name, _, _ in table):
            continue  # not a hyperparameter table (e.g. a run-key table of a preset)
        problems = {a: _mismatches(a, table) for a in algos}
        assert any(not p for p in problems.values()), f"{page}.md table starting {table[0][0]}: {problems}"


README = Path(__file__).resolve().parent.parent / "README.md"
#: README rows `| `algo`[, `algo`...] [note] | family | actions | details |`
ALGO_ROW = re.compile(r"^\| ((?:`[a-z_0-9]+`(?:, )?)+)[^|]*\| [^|]+ \| ([^|]+) \|", re.M)


def test_readme_algorithm_table_lists_each_algorithms_action_spaces():
    """The README's actions column said 'Discrete, Box' for PPO, A2C, REINFORCE, TRPO, NPG, IMPALA and APPO,
    which also train MultiDiscrete and MultiBinary actions (their action_spaces)."""
    rows = ALGO_ROW.findall(README.read_text())
    assert len(rows) >= 15
    wrong = []
    for algos, actions in rows:
        shown = {a.strip() for a in actions.split(",")}
        for algo in re.findall(r"`([a-z_0-9]+)`", algos):
            if algo == "qmix":  # the joint MultiDiscrete action, written 'Discrete per agent'
                continue
            have = {t.__name__ for t in lookup("algorithm", algo).action_spaces}
            if shown != have:
                wrong.append(f"{algo}: README {sorted(shown)}, algorithm {sorted(have)}")
    assert not wrong, wrong


@pytest.mark.parametrize("part", ["Agent", "Algorithm"])
def test_the_interfaces_in_architecture_md_name_every_argument_canter_passes(part):
    """The Model/Algorithm/Agent table of docs/architecture.md is what a subclass overrides: each method it writes
    as ``name(args)`` must list the method's positional parameters, which canter may pass. It wrote the Agent's
    ``scale_reward(reward, done)``, and a subclass overriding it so failed with 'takes 3 positional arguments but 5
    were given' on its first step (also ``sample(obs)``, ``load_state_dict()``, ``load_extra_state()``)."""
    import inspect

    from canter.agents.agent import Agent
    from canter.algorithms.base import Algorithm

    cls = {"Agent": Agent, "Algorithm": Algorithm}[part]
    text = (DOCS.parent / "architecture.md").read_text()
    start = text.index(f"| **{part}** (")
    row = text[start:text.index("\n|", start)]  # a row may wrap over several lines
    checked = 0
    for name, params in re.findall(r"`(\w+)\(([^)]*)\)", row):
        method = getattr(cls, name, None)
        if method is None or params.strip().startswith("**"):  # PPO's value(obs); make_model(**kw)
            continue
        wanted = [p.name for p in inspect.signature(method).parameters.values()
                  if p.kind is p.POSITIONAL_OR_KEYWORD and p.name not in ("self", "cls")]
        assert [p.split("=")[0].strip() for p in params.split(",") if p.strip()] == wanted, f"{part}.{name}"
        checked += 1
    assert checked >= 8


#: what the head of an algorithm page states of its algorithm: ``Family `X```, ``default model `X```,
#: ``default `n_envs` N`` (each must be that of one of the algorithms the page documents)
HEAD_CLAIMS = {"family": re.compile(r"\b[Ff]amily `(\w+)`"), "default_model": re.compile(r"\b[Dd]efault model `(\w+)`"),
               "default_n_envs": re.compile(r"\b[Dd]efault `n_envs` (\d+)")}


def _head_mismatches(text: str, algos: list[str]) -> tuple[int, list[str]]:
    """(claims checked, the ones no algorithm of ``algos`` has) of a page's family / model / n_envs statements."""
    text, checked, wrong = re.sub(r"\s+", " ", text), 0, []
    for attr, pattern in HEAD_CLAIMS.items():
        for said in pattern.findall(text):
            have = [str(getattr(lookup("algorithm", a), attr)) for a in algos]
            checked += 1
            if said not in have:
                wrong.append(f"{attr}: page says {said}, {', '.join(algos)} have {', '.join(have)}")
    return checked, wrong


def test_algorithm_pages_state_their_algorithms_family_model_and_n_envs():
    """'Family `on_policy`', 'default model `mlp_actor_critic`' and 'default `n_envs` 8' on each algorithm page are
    the registered class's ``family``, ``default_model`` and ``default_n_envs`` (``--help`` and ``canter list`` show
    them; nothing checked the pages' statements)."""
    checked, wrong = 0, {}
    for page in sorted(DOCS.glob("*.md")):
        n, bad = _head_mismatches(page.read_text(), PAGE_ALGOS.get(page.stem, [page.stem]))
        checked += n
        if bad:
            wrong[page.name] = bad
    assert wrong == {}
    assert checked >= 30


def test_a_wrong_family_model_or_n_envs_is_caught():
    text = "- Family `on_policy`; default model\n  `mlp_q`; default `n_envs` 4.\n"
    assert _head_mismatches(text, ["ppo"]) == (3, ["default_model: page says mlp_q, ppo have mlp_actor_critic",
                                                   "default_n_envs: page says 4, ppo have 8"])


#: prose that states a run key's or hyperparameter's default: "`reward_window` (default 100)",
#: "`train_freq_unit: step`, the default", "`divergence_guard: stop` (default)", "`normalize_value`, off by default",
#: "`--vectorization auto` (the default)", "`--set conv_precision=bfloat16` (run option, default `float32`)"
PROSE_DEFAULTS = [re.compile(r"`(\w+)`,? \(default:? `?([\w.+-]+)`?\)"),
                  re.compile(r"`(\w+): ([^`]+)`,? \(?(?:the )?default\b(?! before| until)"),
                  re.compile(r"`(\w+)`,? (on|off|true|false) by default"),
                  re.compile(r"`--([a-z][\w-]*) ([^`\s]+)` \(the default\)"),
                  re.compile(r"`--set (\w+)=[^`]*` \([^)]*?\bdefault `([^`]+)`")]


def _defaults(algos: list[str]) -> dict[str, list[tuple[str, object]]]:
    """name -> [(whose, default)] of every run key and of each hyperparameter of ``algos``."""
    from canter.config import RunConfig

    out: dict[str, list[tuple[str, object]]] = {n: [("run", d)] for n, _, d, _ in describe(RunConfig)}
    for algo in algos:
        for n, _, d, _ in describe(lookup("algorithm", algo).Config):
            out.setdefault(n, []).append((algo, d))
    return out


def _same_default(said: str, actual: object) -> bool:
    import yaml

    value = {"on": True, "off": False}.get(said, yaml.safe_load(said))
    if isinstance(actual, (int, float)) and not isinstance(actual, bool) and isinstance(value, (int, float)):
        return float(value) == float(actual)
    return value == actual


def _prose_mismatches(text: str, algos: list[str]) -> tuple[int, list[str]]:
    """(claims checked, the wrong ones) of a page's prose statements of defaults; a hyperparameter's must hold for
    every algorithm in ``algos`` that has it."""
    known, text, checked, wrong = _defaults(algos), re.sub(r"\s+", " ", text), 0, []
    for pattern in PROSE_DEFAULTS:
        for name, said in pattern.findall(text):
            name = name.replace("-", "_")
            if name not in known:
                continue  # not a setting: "`nature` (default for images of at least 36 pixels a side)"
            checked += 1
            wrong += [f"{name}: page says {said}, {whose} has {_shown(d)}" for whose, d in known[name]
                      if not _same_default(said.strip(), d)]
    return checked, wrong


PAGES = sorted(DOCS.parent.rglob("*.md"))


def test_defaults_stated_in_prose_are_the_code_defaults():
    """Every '`name` (default X)', '`name: X`, the default', '`name`, off by default' of docs/ names a run key's or
    hyperparameter's default as the config dataclasses give it (on an algorithm page, its algorithms'; elsewhere,
    every algorithm's that has the hyperparameter). Only the tables were checked."""
    checked, wrong = 0, {}
    for page in PAGES:
        algos = PAGE_ALGOS.get(page.stem, [page.stem]) if page.parent == DOCS else names("algorithm")
        n, bad = _prose_mismatches(page.read_text(), algos)
        checked += n
        if bad:
            wrong[str(page.relative_to(DOCS.parent))] = bad
    assert wrong == {}
    assert checked >= 12


def test_a_wrong_default_in_prose_is_caught():
    text = ("the last `reward_window` (default 50) episodes; `divergence_guard: stop` (default), `manual_backward:\n"
            "false`, the default; (`normalize_value`, on by default); `--vectorization auto` (the default); "
            "`nature` (default for images)")
    assert _prose_mismatches(text, ["ppo"]) == (5, ["reward_window: page says 50, run has 100",
                                                    "manual_backward: page says false, ppo has true",
                                                    "normalize_value: page says on, ppo has false"])


#: a table of defaults outside the algorithm pages: `| key | default | values |` (atari.md's env_kwargs) and
#: `| hyperparameter | default | meaning |` (hindsight.md's, of every algorithm that has the field)
DEFAULT_ROW = re.compile(r"^\| `(\w+)` \| `?([^|`]+?)`? \|", re.M)


def _table_defaults(page: Path) -> list[tuple[str, str]]:
    """The (name, default) rows of the tables headed `| key | default |` or `| hyperparameter | default |`."""
    rows, inside = [], False
    for line in page.read_text().splitlines():
        if re.match(r"\| (key|hyperparameter) \| default \|", line):
            inside = True
        elif inside and not line.startswith("|"):
            inside = False
        elif inside:
            rows += DEFAULT_ROW.findall(line)
    return rows


def test_default_tables_of_atari_and_hindsight_pages_are_the_code_defaults():
    """atari.md's env_kwargs table against the Atari wrapper's settings, hindsight.md's options against every
    off-policy algorithm's config."""
    from canter.envs.atari_kwargs import SETTINGS

    atari = _table_defaults(DOCS.parent / "atari.md")
    assert {n for n, _ in atari} == set(SETTINGS)
    assert [n for n, said in atari if not _same_default(said, SETTINGS[n])] == []
    her = _table_defaults(DOCS.parent / "hindsight.md")
    known = _defaults(names("algorithm"))
    assert len(her) == 2 and all(name in known for name, _ in her)
    assert [f"{name} {whose}" for name, said in her for whose, d in known[name] if not _same_default(said, d)] == []
