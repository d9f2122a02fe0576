"""The code examples of README.md and docs/ run as a user copies them.

Every ```python block of the pages compiles (an indented block, as action-masks.md nests one in a list item, is
dedented first) and every ```yaml block parses; the README's run.yaml names only run keys and PPO
hyperparameters. The cheap Python examples (README's, training-control.md's, action-masks.md's) are executed in
a scratch directory with every training budget cut to a few hundred steps (``canter.train`` and
``canter.make_trainer`` are wrapped to lower ``max_steps``); the offline pipeline of docs/algorithms/offline.md
runs command by command under ``@pytest.mark.slow``; training-control.md's YAML of hooks and callbacks by
import path is given to ``canter train -f`` with a package holding what it names, and the bash blocks'
``canter train`` lines of docs/ run under ``@pytest.mark.slow`` with a budget of a few hundred steps (those that
need an extra that is not installed, a Ray cluster or a placeholder aside). Every ``canter.f(..., kw=...)``
written in a page passes a keyword that ``f`` takes (functions with ``**kwargs`` aside), and every ``module.name`` in backticks whose module is
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


def test_training_control_success_rate_callback_logs_its_column(small_budgets, tmp_path: Path) -> None:
    """training-control.md's SuccessRate callback, attached to a DQN run on BitFlipping-v0 (whose episodes report
    ``info["is_success"]``): its ``custom/success_rate`` lands in updates.parquet, a fraction."""
    import pyarrow.parquet as pq

    ns = _run(_blocks(ROOT / "docs" / "training-control.md", "python")[1])
    canter.train("dqn", "BitFlipping-v0", callbacks=[ns["SuccessRate"]()], run_dir="run", learning_starts=64,
                 log_every=1, quiet=True)
    rates = [r for r in pq.read_table(tmp_path / "run" / "updates.parquet").column("custom/success_rate").to_pylist()
             if r is not None]
    assert rates and all(0 <= r <= 1 for r in rates)


def test_training_control_yaml_names_hooks_and_callbacks_by_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture) -> None:
    """training-control.md's YAML (``hooks`` and ``callbacks`` by import path) given to ``canter train -f``, with
    my_pkg holding the page's StopWhenStable, a ``log_losses`` hook and an ``Other`` callback taking ``patience``."""
    page = ROOT / "docs" / "training-control.md"
    pkg = tmp_path / "my_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "monitor.py").write_text("def log_losses(trainer, losses):\n    print('logged', trainer.step)\n")
    stop_when_stable = _blocks(page, "python")[0].split("agent = canter.train")[0]
    (pkg / "cb.py").write_text(stop_when_stable + "\nclass Other(Callback):\n    def __init__(self, patience):\n"
                               "        self.patience = patience\n    def should_stop(self, trainer):\n"
                               "        return None\n")
    (tmp_path / "run.yaml").write_text(_blocks(page, "yaml")[0])
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("my_pkg", "my_pkg.monitor", "my_pkg.cb"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    argv = ["train", "ppo", "--env", "CartPole-v1", "-f", "run.yaml", "--max-steps", "128", "--n-envs", "2",
            "--set", "n_steps=64", "--set", "batch_size=64", "--eval-episodes", "1", "--run-dir", "run", "--quiet"]
    assert cli_main(argv) in (0, None)
    assert capsys.readouterr().out.count("logged 128") == 1


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


#: modules an env id needs beyond canter's own dependencies (a command needing a missing one is skipped)
EXTRA_MODULES = {"ALE/": "ale_py", "NoFrameskip": "ale_py", "LunarLander": "Box2D", "HalfCheetah": "mujoco",
                 "Hopper": "mujoco"}
TRAIN_PAGES = [p for p in PAGES[1:] if p.name not in ("tools.md", "offline.md")]  # offline.md: its own test above


def _train_lines(page: Path) -> list[tuple[list[str], bool]]:
    """(argv after ``canter``, whether ``PYTHONPATH=tests`` precedes it) of each ``canter train`` line of a page's
    bash blocks (continuations joined, comments cut; the placeholders S and B of recurrent_ppo.md's commands become
    0 and true)."""
    out = []
    for block in _blocks(page, "bash"):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line.split("  #", 1)[0])
            tests_path = words[:1] == ["PYTHONPATH=tests"]
            words = words[1:] if tests_path else words
            if words[:2] == ["canter", "train"]:
                out.append(([{"S": "0", "B": "true"}.get(w, w) for w in words[1:]], tests_path))
    return out


def _missing_module(argv: list[str]) -> str | None:
    """The module that ``--env`` of ``argv`` needs and that is not installed, if any."""
    import importlib.util

    env = argv[argv.index("--env") + 1] if "--env" in argv else ""
    needed = [m for key, m in EXTRA_MODULES.items() if key in env]
    if ":" in env:
        module = env.split(":", 1)[1] if env.startswith("pettingzoo:") else env.split(":", 1)[0]
        needed.append(module.split(".")[0])
    return next((m for m in needed if importlib.util.find_spec(m) is None), None)


@pytest.mark.slow
@pytest.mark.parametrize("page", [p for p in TRAIN_PAGES if _train_lines(p)], ids=lambda p: p.name)
def test_documented_train_commands_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ``canter train`` line of the page's bash blocks, in order in one directory (connect_four's DQN plays
    the run the line before writes), with ``--max-steps`` CAP, one evaluation episode and ``--quiet`` added. Lines
    are left out that need Ray (``--explorers``), an env module that is not installed (mpe2, Box2D, MuJoCo,
    gymnasium_robotics) or a run that no line before wrote (multiagent.md's ``init_from=runs/both``)."""
    monkeypatch.chdir(tmp_path)
    ran = 0
    for argv, tests_path in _train_lines(page):
        written = argv[argv.index("--run-dir") + 1] if "--run-dir" in argv else None
        read = [r for r in re.findall(r"\bruns/[\w.-]+", " ".join(argv)) if r != written]
        if "--explorers" in argv or _missing_module(argv) or any(not Path(r).exists() for r in read):
            continue
        if tests_path:
            monkeypatch.syspath_prepend(str(ROOT / "tests"))
        assert cli_main([*argv, "--max-steps", str(CAP), "--eval-episodes", "1", "--quiet"]) in (0, None), argv
        ran += 1
    if not ran:
        pytest.skip(f"every train line of {page.name} needs Ray or a module that is not installed")
