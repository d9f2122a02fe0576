"""The code examples of README.md and docs/ run as a user copies them.

Every ```python block of the pages compiles (an indented block, as action-masks.md nests one in a list item, is
dedented first) and every ```yaml block parses; the README's run.yaml names only run keys and PPO
hyperparameters. The cheap Python examples (README's, training-control.md's, action-masks.md's) are executed in
a scratch directory with every training budget cut to a few hundred steps (``canter.train`` and
``canter.make_trainer`` are wrapped to lower ``max_steps``); the offline pipeline of docs/algorithms/offline.md
runs command by command under ``@pytest.mark.slow``. Every ``canter.f(..., kw=...)`` written in a page passes a
keyword that ``f`` takes (functions with ``**kwargs`` aside), and every ``module.name`` in backticks whose module is
canter's names something in it. What flags the documented ``canter`` commands take is
tests/test_docs_flags.py's job, and the preset and hyperparameter tables are tests/test_docs_tables.py's and
tests/test_docs_presets.py's.
"""

from __future__ import annotations

import glob
import re
import shlex
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

import canter
from canter.algorithms.ppo import PPO
from canter.config import RunConfig
from canter.cli import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
CAP = 384  # the training budget of an executed example (steps)
pytestmark = pytest.mark.filterwarnings("ignore::canter.errors.CanterWarning")  # budgets below a rollout


def _blocks(page: Path, lang: str) -> list[str]:
    """The dedented ```LANG blocks of a page."""
    return [textwrap.dedent(b) for b in re.findall(rf"^[ \t]*```{lang}\n(.*?)^[ \t]*```", page.read_text(), re.S | re.M)]


def _all_blocks(lang: str) -> list[tuple[str, str]]:
    return [(f"{p.relative_to(ROOT)}#{i}", b) for p in PAGES for i, b in enumerate(_blocks(p, lang))]


@pytest.mark.parametrize("name,code", _all_blocks("python"), ids=[n for n, _ in _all_blocks("python")])
def test_python_blocks_compile(name: str, code: str) -> None:
    compile(code, name, "exec")


@pytest.mark.parametrize("name,text", _all_blocks("yaml"), ids=[n for n, _ in _all_blocks("yaml")])
def test_yaml_blocks_parse(name: str, text: str) -> None:
    assert isinstance(yaml.safe_load(text), dict), name


def test_readme_run_yaml_names_run_keys_and_ppo_hyperparameters() -> None:
    data = yaml.safe_load(_blocks(ROOT / "README.md", "yaml")[0])
    hparams = data.pop("hparams")
    assert set(data) <= set(RunConfig.__dataclass_fields__), set(data) - set(RunConfig.__dataclass_fields__)
    assert set(hparams) <= set(PPO.Config.__dataclass_fields__)


@pytest.fixture
def small_budgets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[dict[str, Any]]:
    """Run in ``tmp_path`` with ``canter.train`` / ``canter.make_trainer`` budgets lowered to CAP steps; returns
    the keyword arguments of each call."""
    calls: list[dict[str, Any]] = []

    def capped(fn):
        def call(*args: Any, **kw: Any) -> Any:
            calls.append(dict(kw))
            kw["max_steps"] = min(kw.get("max_steps", CAP), CAP)
            kw.setdefault("eval_episodes", 2)
            if (args or [kw.get("algo")])[0] == "ppo":  # one short rollout (CartPole-v0 has no preset: 8 x 2048)
                kw.update(n_envs=min(kw.get("n_envs", 2), 2), n_steps=64, batch_size=64)
            return fn(*args, **kw)
        return call

    monkeypatch.setattr(canter, "train", capped(canter.train))
    monkeypatch.setattr(canter, "make_trainer", capped(canter.make_trainer))
    monkeypatch.chdir(tmp_path)
    return calls


def _run(code: str) -> dict[str, Any]:
    """Execute a page's example; a path written with '...' (``runs/ppo-CartPole-v1-...``) is the newest match."""
    code = re.sub(r"\"(runs/[^\"]*?)\.\.\.\"", r'__latest("\1")', code)
    namespace: dict[str, Any] = {"__latest": lambda prefix: sorted(glob.glob(prefix + "*"))[-1],
                                 "__name__": "__doc_example__"}
    exec(compile(code, "<doc example>", "exec"), namespace)
    return namespace


def test_readme_python_example_runs(small_budgets, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """README's Python section: train, predict, load, save, init_from, evaluate and a make_trainer loop."""
    ns = _run(_blocks(ROOT / "README.md", "python")[0])
    assert len(small_budgets) == 3  # two canter.train calls and one make_trainer
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["ppo_cartpole.json",
                                                                        "ppo_cartpole.safetensors"]
    assert len(list((tmp_path / "runs").glob("ppo-CartPole-v0-*"))) == 1
    assert len(ns["actions"]) == 2 and ns["result"].mean_return > 0
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) >= 2  # the evaluation's numbers, then at least the final evaluation of the loop
    assert printed[-1].split()[0] == str(ns["record"].step)


def test_training_control_callback_example_runs(small_budgets, capsys: pytest.CaptureFixture) -> None:
    page = ROOT / "docs" / "training-control.md"
    ns = _run(_blocks(page, "python")[0])
    assert ns["agent"] is not None
    assert re.match(r"\d+ \{'policy_loss'", capsys.readouterr().out)  # the after_update hook's print


def test_action_masks_taxi_example_registers_a_masked_env(small_budgets, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """action-masks.md: the InfoActionMask example in my_envs.py, then ``--env my_envs:TaxiMasked-v4``."""
    (tmp_path / "my_envs.py").write_text(_blocks(ROOT / "docs" / "action-masks.md", "python")[0])
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_envs", raising=False)
    agent = canter.train("ppo", env="my_envs:TaxiMasked-v4", run_dir=None, n_envs=1, n_steps=64, batch_size=64)
    import gymnasium as gym

    obs, _ = gym.make("TaxiMasked-v4").reset(seed=0)
    assert set(obs) == {"observation", "action_mask"} and agent is not None


def _commands(page: Path) -> list[list[str]]:
    """The ``canter ...`` and ``mkdir`` lines of a page's first bash block, as argument lists (comments cut)."""
    lines = _blocks(page, "bash")[0].splitlines()
    return [shlex.split(line.split("#", 1)[0]) for line in lines if line.strip()]


@pytest.mark.slow
def test_offline_pipeline_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/algorithms/offline.md's commands in order, each training cut to a few hundred steps (the Minari one,
    which needs a downloaded dataset, left out): the datasets and runs they name are written."""
    monkeypatch.chdir(tmp_path)
    ran = 0
    for argv in _commands(ROOT / "docs" / "algorithms" / "offline.md"):
        if argv[0] == "mkdir":
            Path(argv[-1]).mkdir(parents=True)
            continue
        assert argv[0] == "canter", argv
        if any(a.startswith("minari:") for a in argv):
            continue
        args = argv[1:]
        if args[0] == "train":
            args = [a for i, a in enumerate(args) if a != "--max-steps" and args[i - 1] != "--max-steps"]
            args += ["--max-steps", str(CAP), "--eval-episodes", "2", "--quiet"]
        if "--transitions" in args:
            args[args.index("--transitions") + 1] = "500"
        assert cli_main(args) in (0, None), args
        ran += 1
    assert ran == 10
    assert {p.name for p in (tmp_path / "data").iterdir()} == {
        f"{name}.{ext}" for name in ("cartpole", "random", "replay", "pendulum") for ext in ("safetensors", "json")}
    assert {p.name.split("-")[0] for p in (tmp_path / "runs").iterdir()} >= {"bc", "cql", "td3bc"}


CALL = re.compile(r"\b(canter(?:\.[a-z_]+)+)\(([^()`]*(?:\([^()`]*\)[^()`]*)*)\)")
#: calls written to show a refusal: SB3's keywords, answered with canter's (README's 'Coming from Stable-Baselines3')
REFUSED = {("canter.evaluate", "n_eval_episodes"), ("canter.load", "env")}


def _callable(dotted: str) -> Any:
    """The object a dotted ``canter.x.y`` name reaches (module prefix imported), or None."""
    import importlib

    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr, None)
        return obj
    return None


def _unknown_keywords(text: str) -> list[str]:
    """'canter.f(kw=)' for each keyword a page passes to a canter function that does not take it (functions with
    ``**kwargs``, such as ``canter.train``, take any)."""
    import inspect

    bad = []
    for name, args in CALL.findall(text):
        fn = _callable(name)
        if not callable(fn):
            bad.append(f"{name}: no such function")
            continue
        params = inspect.signature(fn).parameters
        if any(p.kind is p.VAR_KEYWORD for p in params.values()):
            continue
        bad += [f"{name}({kw}=)" for kw in re.findall(r"(?:^|,)\s*([a-z_]\w*)=", args)
                if kw not in params and (name, kw) not in REFUSED]
    return bad


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_documented_keywords_exist(page: Path) -> None:
    """Each ``canter.f(..., kw=...)`` a page writes passes a keyword that ``f`` takes: docs/tools.md wrote
    ``canter.play.play(agent, env=None, ...)`` where the parameter was ``env_id`` (a TypeError)."""
    assert _unknown_keywords(page.read_text()) == []


def test_an_unknown_keyword_is_caught() -> None:
    text = ("`canter.evaluate(agent, episodez=3)` and `canter.evaluate(agent, episodes=3)`, `canter.nope()`, "
            "`canter.train('ppo', anything=1)`")
    assert _unknown_keywords(text) == ["canter.evaluate(episodez=)", "canter.nope: no such function"]


#: a dotted name in backticks whose first part is a canter module: `config_values.set_nested`, `pool.STEADY_SECONDS`
DOTTED = re.compile(r"`((?:canter\.)?[a-z_]+(?:\.[A-Za-z_]\w*)+)(?:\([^`]*\))?`")
#: first parts that name an object in the prose, not the module of that name (`agent.save`, `run.close`)
INSTANCES = {"agent", "run", "trainer", "batch", "spaces"}
FILE_SUFFIXES = {"py", "md", "yaml", "yml", "json", "parquet", "png", "svg", "html", "csv", "mp4"}


def _canter_modules() -> dict[str, str]:
    """Each canter module's last name -> its dotted path (where the last name is unique)."""
    import pkgutil

    found: dict[str, list[str]] = {}
    for info in pkgutil.walk_packages(canter.__path__, "canter."):
        found.setdefault(info.name.rsplit(".", 1)[-1], []).append(info.name)
    return {short: paths[0] for short, paths in found.items() if len(paths) == 1}


def _missing_code_names(text: str, modules: dict[str, str]) -> list[str]:
    """The ``module.name`` references of a page that name nothing in that canter module."""
    bad = []
    for name in dict.fromkeys(DOTTED.findall(text)):
        parts = name.split(".")
        if parts[-1] in FILE_SUFFIXES or parts[0] in INSTANCES:
            continue
        if parts[0] != "canter":
            if parts[0] not in modules:
                continue
            parts = modules[parts[0]].split(".") + parts[1:]
        if _callable(".".join(parts)) is None:
            bad.append(name)
    return bad


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_documented_code_names_exist(page: Path) -> None:
    """``module.name`` in backticks names a thing of that canter module: docs/architecture.md said offline runs
    were built by ``api._offline_trainer``, which had moved to ``offline_setup.offline_trainer``."""
    assert _missing_code_names(page.read_text(), _canter_modules()) == []


def test_a_missing_code_name_is_caught() -> None:
    text = ("`api._offline_trainer` `offline_setup.offline_trainer` `pool.STEADY_SECONDS` `agent.save(path)` "
            "`run.py` `canter.utils.stream_rng(seed)` `canter.utils.nope`")
    assert _missing_code_names(text, _canter_modules()) == ["api._offline_trainer", "canter.utils.nope"]
