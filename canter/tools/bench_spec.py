"""The grid of ``canter benchmark FILE.yaml`` (:mod:`canter.tools.benchmark` describes the file): its cells,
parsed and validated (config, env id, action space) before anything runs."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from canter.config import RunConfig, coerce, fields_of, left_empty, resolve_config, resolved_dict
from canter.yaml_io import load_yaml
from canter.errors import CanterError, unknown

SPEC_KEYS = ("seeds", "set", "envs", "algos")
#: the most seeds (runs per algorithm and env) a benchmark file may ask for: a count such as 1e9 would build a
#: grid of a billion cells before the first run (and 1e300 overflow)
MAX_SEEDS = 1000
ALGO_KEYS = ("envs", "set")


@dataclass(frozen=True)
class Cell:
    """One run of the grid."""

    algo: str
    env: str
    seed: int
    overrides: dict[str, Any]

    @property
    def name(self) -> str:
        """Run directory name."""
        return f"{self.algo}-{self.env.replace('/', '-').replace(':', '-')}-seed{self.seed}"


def _overrides(data: Any, where: str) -> dict[str, Any]:
    """A ``set`` mapping as make_trainer keyword arguments (``hparams.lr`` / ``hparams: {lr: }`` -> ``lr``)."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CanterError(f"{where} must be a mapping of config keys to values, got {data!r}")
    out: dict[str, Any] = {}
    given: dict[str, str] = {}  # name -> the key that set it ('lr', 'hparams.lr', 'hparams: {lr: }')

    def put(name: str, value: Any, spelled: str) -> None:
        if name in given:  # 'lr' and 'hparams: {lr: }' in one mapping: one of them would be dropped without a word
            raise CanterError(f"{where}: '{given[name]}' and '{spelled}' both set '{name}'; give it once")
        given[name] = spelled
        out[name] = value

    for key, value in data.items():
        key = str(key)
        if key in ("algo", "env"):  # the grid's own: given twice to resolve_config, a TypeError traceback
            raise CanterError(f"{where}: '{key}' cannot be set here; the grid takes it from "
                              f"{'algos' if key == 'algo' else 'envs'}")
        if key == "hparams":
            if value is not None and not isinstance(value, dict):
                raise CanterError(f"{where}: 'hparams' must be a mapping of hyperparameter names to values, "
                                  f"got {value!r}")
            for k, v in (value or {}).items():
                put(str(k), v, f"hparams: {{{k}: ...}}")
        else:  # a mapping or list run key left empty ('env_kwargs:') is {} / [], as in a config file
            run_key = fields_of(RunConfig).get(key)
            put(key[8:] if key.startswith("hparams.") else key,
                value if run_key is None else left_empty(run_key[1], value, where), key)
    return out


def _env_entries(envs: Any, where: str) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(envs, (str, dict)):
        envs = [envs]
    if not isinstance(envs, list) or not envs:
        raise CanterError(f"{where} must be a non-empty list of env ids")
    out = []
    for item in envs:
        if isinstance(item, str):
            out.append((item, {}))
        elif isinstance(item, dict):
            out.extend((str(k), _overrides(v, f"{where}: {k}")) for k, v in item.items())
        else:
            raise CanterError(f"{where}: expected an env id or 'ENV: {{overrides}}', got {item!r}")
    return out


def _seeds(value: Any, path: str | Path) -> list[int]:
    """The seeds of a benchmark file's ``seeds`` (a count, or a list of seeds). Each number is read as a config
    file's integers are (:func:`~canter.config.coerce`): a whole number in exponent form (``1e1``) is one,
    ``1.5`` is refused; more than :data:`MAX_SEEDS` seeds are refused."""
    bad = CanterError(f"{path}: 'seeds' must be a count >= 1 or a list of seeds >= 0, got {value!r}")

    def whole(number: Any) -> int:
        try:
            return coerce(int, number, "seeds")
        except CanterError:
            raise bad from None

    count = len(value) if isinstance(value, list) else whole(value)
    if count > MAX_SEEDS:  # before any list is built: range(1e300) overflows, range(1e9) fills the memory
        shown = (f"a list of {count} seeds" if isinstance(value, list) else
                 f"{value:g}" if isinstance(value, float) else repr(value))  # YAML's 1e9: 1e+09, not 1000000000.0
        raise CanterError(f"{path}: 'seeds' must be at most {MAX_SEEDS} seeds (runs per algorithm and env), "
                          f"got {shown}")
    if isinstance(value, list):
        seeds = [whole(s) for s in value]
        if seeds and min(seeds) >= 0:
            return seeds
    elif count >= 1:
        return list(range(count))
    raise bad


def load_spec(path: str | Path) -> list[Cell]:
    """Parse and validate a benchmark file into its grid of cells (nothing is run or written)."""
    data = load_yaml(path)
    for key in data:
        if key not in SPEC_KEYS:
            raise unknown(f"key in {path}", str(key), SPEC_KEYS)
    seeds = _seeds(data.get("seeds", 3), path)
    common = _overrides(data.get("set"), f"{path}: set")
    algos = data.get("algos")
    if isinstance(algos, list):
        algos = {str(a): {} for a in algos}
    if not isinstance(algos, dict) or not algos:
        raise CanterError(f"{path}: 'algos' must list at least one algorithm")
    cells = []
    for algo, opts in algos.items():
        opts = opts or {}
        if not isinstance(opts, dict):
            raise CanterError(f"{path}: options of '{algo}' must be a mapping with 'envs' and/or 'set'")
        for key in opts:
            if key not in ALGO_KEYS:
                raise unknown(f"key under algos.{algo} in {path}", str(key), ALGO_KEYS)
        if "envs" not in opts and "envs" not in data:
            raise CanterError(f"{path}: no envs for '{algo}'; add a top-level 'envs' list or algos.{algo}.envs")
        algo_over = _overrides(opts.get("set"), f"{path}: algos.{algo}.set")
        for env, env_over in _env_entries(opts.get("envs", data.get("envs")), f"{path}: envs of '{algo}'"):
            overrides = {**common, **algo_over, **env_over}
            if "seed" in overrides:
                raise CanterError(f"{path}: set the seeds with the top-level 'seeds', not 'seed' ({algo} on {env})")
            cells.extend(Cell(algo, env, seed, overrides) for seed in seeds)
    names = [c.name for c in cells]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise CanterError(f"{path}: the run '{dup}' appears twice in the grid")
    return cells


def check_cells(cells: list[Cell]) -> dict[str, dict[str, Any]]:
    """Resolve every cell's config and check the algorithm can act in its env (CanterError if not).

    Returns each cell's resolved config (as in ``config.yaml``) by run name.
    """
    from canter.config_errors import blank_dataset_error
    from canter.registry import lookup
    from canter.tools.checks import check_algo_env, dataset_mismatch

    checked: set[tuple[str, str]] = set()
    configs = {}
    for cell in cells:
        run, algo_cfg = resolve_config(cell.algo, cell.env, seed=cell.seed, **cell.overrides)
        configs[cell.name] = resolved_dict(run, algo_cfg)
        offline = lookup("algorithm", run.algo).family == "offline"
        if run.dataset is None and offline:  # else: when its run starts
            raise CanterError(f"{run.algo} learns from a dataset: give one in the benchmark file, set: {{dataset: "
                              f"PATH}} (top level or the algorithm's; write one with: canter collect RUN_DIR --out PATH)")
        if run.dataset is not None and not offline:  # else: when its run starts, after the runs before it trained
            raise CanterError(f"{run.algo} learns from the env and takes no dataset (only offline algorithms do): give "
                              f"dataset in an offline algorithm's own set, algos: {{bc: {{set: {{dataset: PATH}}}}}} (a "
                              f"top-level set applies to every algorithm)")
        blank = blank_dataset_error(run.dataset, f"dataset in the benchmark file's set ({run.algo} on {run.env})"
                                    ) if offline else None
        if blank is not None:  # the dataset loader's error named the flag --dataset, which a benchmark has not
            raise blank
        mismatch = dataset_mismatch(run) if offline else None
        if mismatch is not None and mismatch[0] == "env":
            raise CanterError(f"{run.algo} on {run.env}: dataset '{run.dataset}' was collected on {mismatch[1]}; "
                              f"list {run.algo} under envs: [{mismatch[1]}]")
        if mismatch is not None:  # as the offline trainer refuses it, when it starts
            raise CanterError(f"{run.algo} on {run.env}: dataset '{run.dataset}' was collected with env_kwargs "
                              f"{mismatch[1]}, not {run.env_kwargs}; an offline run evaluates on its data's env: "
                              f"leave env_kwargs out of {run.algo}'s set (a top-level set applies to every "
                              f"algorithm), or change only its evaluation env with eval_env_kwargs")
        if (cell.algo, cell.env) not in checked:
            checked.add((cell.algo, cell.env))
            check_algo_env(run.algo, run.env, run.env_kwargs, run.policies, run.central_state, run)
    return configs
