"""Read a run directory (config, summary, parquet tables, checkpoints, videos) into plain numpy."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from canter.yaml_io import load_yaml
from canter.errors import CanterError, check_utf8_path


@dataclass
class RunData:
    """Everything a tool reads from one run directory; tables are dicts of numpy columns."""

    dir: Path
    config: dict[str, Any]
    summary: dict[str, Any]
    history: dict[str, np.ndarray] = field(default_factory=dict)
    evaluations: dict[str, np.ndarray] = field(default_factory=dict)
    updates: dict[str, np.ndarray] = field(default_factory=dict)
    #: each ``history`` row's policy (the text column a run of several policies writes), else None
    history_policies: np.ndarray | None = None

    @property
    def algo(self) -> str:
        """Algorithm name from the config."""
        return str(self.config.get("algo", "?"))

    @property
    def env(self) -> str:
        """Environment id from the config."""
        return str(self.config.get("env", "?"))

    @property
    def target_reward(self) -> float | None:
        """The run's target reward, if it had one."""
        value = self.config.get("target_reward")
        return None if value is None else float(value)  # a number: load_run checked it

    def final_return(self) -> float | None:
        """The last evaluation's mean return (``summary.json``'s, else the evaluation table's last row); None for a
        run that never evaluated (one that diverged first): its rolling training return, of sampled actions, is
        not an evaluation return and must not stand beside the other runs' in a benchmark's statistics."""
        if self.summary.get("last_eval_return") is not None:
            return float(self.summary["last_eval_return"])
        if len(self.evaluations.get("mean_return", ())):
            return float(self.evaluations["mean_return"][-1])
        return None


#: the numeric columns the tools read from each table (``canter.logging.history`` writes them)
REQUIRED_COLUMNS = {"history.parquet": ("step", "wall_time", "episode_return", "rolling_return"),
                    "evaluations.parquet": ("step", "wall_time", "mean_return", "std_return"),
                    "updates.parquet": ("step", "wall_time")}


#: the tables of a run directory, as :class:`RunData` names them (each in ``NAME.parquet``)
TABLES = ("history", "evaluations", "updates")


#: the numbers the tools read from ``summary.json`` (``canter.run`` writes them)
SUMMARY_NUMBERS = ("steps", "episodes", "updates", "wall_seconds", "best_eval_return", "last_eval_return")
#: ... of which these are never null (a run without an evaluation has null eval returns)
SUMMARY_COUNTS = ("steps", "episodes", "updates", "wall_seconds")


def _numeric(kind: Any) -> bool:
    """Whether a column of arrow type ``kind`` holds numbers (booleans and all-null columns too)."""
    import pyarrow as pa

    return any(test(kind) for test in (pa.types.is_integer, pa.types.is_floating, pa.types.is_boolean,
                                       pa.types.is_decimal, pa.types.is_null))


def _open_table(path: Path, required: tuple[str, ...]) -> tuple[Any, list[str]]:
    """The parquet file ``path`` (only its footer read) and its numeric columns; a CanterError naming the file if it
    is not parquet, or if it has rows but not each ``required`` column as numbers."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    check_utf8_path(path, "table")
    try:
        parquet = pq.ParquetFile(path, page_checksum_verification=True)  # pages without a checksum: not checked
        numeric = [f.name for f in parquet.schema_arrow if _numeric(f.type)]
    except (pa.ArrowException, OSError) as exc:
        raise CanterError(f"cannot read '{path}' as a parquet table: {_first_line(exc)}") from None
    missing = [c for c in required if c not in numeric]
    if parquet.metadata.num_rows and missing:
        parquet.close()
        raise CanterError(f"'{path}' is damaged: it has no numeric '{missing[0]}' column")
    return parquet, numeric


def check_table(path: Path, required: tuple[str, ...] = ()) -> None:
    """Refuse, as :func:`read_table` would, a damaged parquet file ``path`` without reading its rows (missing: fine)."""
    if path.exists():
        _open_table(path, required)[0].close()


def read_table(path: Path, required: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """A parquet file as ``{column: float64 array}`` (nulls as NaN; columns that are not numbers, such as a
    multi-agent run's agent names, left out; missing file: empty dict); a CanterError naming the file if it
    cannot be read as parquet, or if it has rows but not each ``required`` column as numbers. Columns are
    converted by pyarrow, never row by row."""
    if not path.exists():
        return {}
    import pyarrow as pa

    parquet, numeric = _open_table(path, required)
    try:
        with parquet:
            table = parquet.read(columns=numeric)
        # safe=False: an int64 beyond 2**53 is rounded, as float64 holds it
        columns = {name: table.column(name).cast(pa.float64(), safe=False) for name in numeric}
        return {name: (c.fill_null(np.nan) if c.null_count else c).to_numpy() for name, c in columns.items()}
    except (pa.ArrowException, OSError) as exc:
        raise CanterError(f"cannot read '{path}' as a parquet table: {_first_line(exc)}") from None


def read_policies(path: Path) -> np.ndarray | None:
    """The ``policy`` column of the history table ``path`` as an object array of str, one per row (a run of several
    policies, ``policies: type | agent``, writes it), else None (no file, no such column: a run of one policy).
    A CanterError naming the file if the column cannot be read as text."""
    if not path.exists():
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        if "policy" not in pq.read_schema(path).names:
            return None
        column = pq.read_table(path, columns=["policy"]).column("policy").cast(pa.string()).fill_null("?")
        encoded = column.combine_chunks().dictionary_encode()  # a name per distinct policy, not one per row
    except (pa.ArrowException, OSError) as exc:
        raise CanterError(f"cannot read the 'policy' column of '{path}': {_first_line(exc)}") from None
    names = np.asarray(encoded.dictionary.to_pylist() + [""], dtype=object)
    return names[encoded.indices.to_numpy(zero_copy_only=False)]


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return " ".join(lines[0].split()) if lines else type(exc).__name__


def read_json_mapping(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; a CanterError naming the file if it is not valid JSON or not an object."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:  # ValueError: bad JSON, bytes that are not UTF-8
        raise CanterError(f"cannot read '{path}': {_first_line(exc)}") from None
    if not isinstance(data, dict):
        kinds = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
        kind = kinds.get(type(data), "a number")
        raise CanterError(f"'{path}' is damaged: it holds {kind}, not a JSON object")
    return data


#: update statistics an algorithm logged under another name before: algorithm -> {old name: name}. A run's column of
#: the old name is read under the new one (:func:`renamed_stats`), so an older run compares with a newer one and with
#: the other algorithms that log the same quantity (ACER's critic loss was ``q_loss``, SAC's and TD3's ``critic_loss``)
RENAMED_STATS = {"acer": {"q_loss": "critic_loss"}}


def _stat_algo(config: dict[str, Any], prefix: str) -> str:
    """The algorithm that logged the update statistics ``prefix/NAME`` of a run (``""``: the run's own; a policy's
    name: that policy's, its ``policy_hparams`` ``algo`` where it has one)."""
    hparams = config.get("policy_hparams")
    own = hparams.get(prefix) if prefix and isinstance(hparams, dict) else None
    algo = own.get("algo") if isinstance(own, dict) else None
    return str(algo if algo is not None else config.get("algo", "?")).lower()


def renamed_stats(updates: dict[str, np.ndarray], config: dict[str, Any]) -> dict[str, np.ndarray]:
    """``updates`` (a run's update statistics, config ``config``) with each column that its algorithm logged under an
    older name (:data:`RENAMED_STATS`; a multi-policy run's ``POLICY/NAME`` too) under the current one, in its place;
    a resumed run that has both (the old name's rows before the resume, the new name's after) as one column."""
    out: dict[str, np.ndarray] = {}
    for name, column in updates.items():
        prefix, sep, stat = name.rpartition("/")
        new = RENAMED_STATS.get(_stat_algo(config, prefix), {}).get(stat)
        if new is not None:
            name = f"{prefix}{sep}{new}"
        if name in out or (new is not None and name in updates):
            kept = out.get(name, updates.get(name))
            out[name] = np.where(np.isnan(kept), column, kept)  # each row has one of them (or neither)
        else:
            out[name] = column
    return out


def load_run(path: str | Path, read: tuple[str, ...] = TABLES) -> RunData:
    """Load a run directory written by ``canter train``; a CanterError if it is not one or a file is damaged.

    ``read`` names the tables to read (``history``, ``evaluations``, ``updates``); the others are only
    checked (their footer: parquet, with the columns canter writes) and left empty in the RunData, so a tool
    that draws no update statistics does not read a long run's million update rows."""
    p = Path(path)
    if not p.is_dir():
        from canter.checkpoint import no_run_dir

        raise no_run_dir(path)
    cfg_path = p / "config.yaml"
    if not cfg_path.exists():
        from canter.run_dirs import held_count, runs_held

        held = runs_held(p)  # `canter plot runs`: their parent
        if held:
            raise CanterError(f"'{path}' is not a canter run directory (no config.yaml); it holds {held_count(held)}, "
                              f"such as '{held[0]}': pass a run directory (canter plot takes several: {p / '*'})")
        raise CanterError(f"'{path}' is not a canter run directory (no config.yaml)")
    config = load_yaml(cfg_path)  # a CanterError naming the file and line if malformed or not a mapping
    target = config.get("target_reward")
    if target is not None and (isinstance(target, bool) or not isinstance(target, (int, float))):
        raise CanterError(f"'{cfg_path}' is damaged: 'target_reward' must be a number or null, got {target!r}")
    summary_path = p / "summary.json"
    summary = read_json_mapping(summary_path) if summary_path.exists() else {}
    for key in SUMMARY_NUMBERS:  # the tools compute with them (steps / wall_seconds, float(...))
        value = summary.get(key)
        if key in SUMMARY_COUNTS and key in summary and value is None:  # the report formatted it: a TypeError
            raise CanterError(f"'{summary_path}' is damaged: '{key}' must be a number, got null")
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise CanterError(f"'{summary_path}' is damaged: '{key}' must be a number or null, got {value!r}")
    tables = {}
    for name in TABLES:
        file = p / f"{name}.parquet"
        if name in read:
            tables[name] = read_table(file, REQUIRED_COLUMNS[file.name])
        else:
            check_table(file, REQUIRED_COLUMNS[file.name])
    if "updates" in tables:
        tables["updates"] = renamed_stats(tables["updates"], config)
    policies = read_policies(p / "history.parquet") if "history" in read else None
    return RunData(p, config, summary, **tables, history_policies=policies)


def checkpoints(run_dir: Path) -> list[dict[str, Any]]:
    """The run's checkpoints, those that load: name, step, size in bytes and the trainer counters at save time. A
    ``.safetensors`` alone (a prune killed between its two deletions) is one, its metadata read from its header, as
    ``canter.load`` reads it; a ``.json`` without its tensors, metadata that cannot be read or whose step is not a
    whole number is left out."""
    from canter.checkpoint import read_metadata

    folder = run_dir / "checkpoints"
    names = sorted({p.name.rpartition(".")[0] for p in folder.glob("*.json")}
                   | {p.name.rpartition(".")[0] for p in folder.glob("*.safetensors")})
    rows = []
    for name in names:
        tensors = folder / f"{name}.safetensors"
        try:
            meta = read_metadata(folder / name) if tensors.is_file() else None
            size = tensors.stat().st_size
        except (CanterError, OSError):  # damaged, not canter's, its two files not one save's, or pruned meanwhile
            continue
        if not isinstance(meta, dict):
            continue
        step = meta.get("step")
        if step is not None and (isinstance(step, bool) or not isinstance(step, int)):  # damaged: the rows sort by it
            continue
        trainer = meta.get("trainer") if isinstance(meta.get("trainer"), dict) else {}
        rows.append({
            "name": name, "step": meta.get("step"), "bytes": size,
            "best_eval_return": trainer.get("best_eval_return"), "last_eval_return": trainer.get("last_eval_return"),
            "sha256": str(meta.get("sha256", ""))[:12],
        })
    return sorted(rows, key=lambda r: (r["step"] or 0, r["name"]))
