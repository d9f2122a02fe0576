"""A run config's ``imports``: user modules imported before any of the run's names is looked up
(they register algorithms, models, agents, envs or encoders by name; :mod:`canter.registry`)."""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from canter.errors import CanterError
from canter.yaml_io import load_yaml


def check_config_path(config_file: str | Path) -> None:
    """A one-line :class:`CanterError` for a blank ``-f/--config`` path (``-f ''``, which would otherwise be taken as
    no config file, or named blank in an error about the file)."""
    if not str(config_file).strip():
        raise CanterError(f"-f/--config needs a config file path, got {str(config_file)!r}")


def load_config_file(path: str | Path) -> dict[str, Any]:
    """A run config file (``-f FILE``) as a mapping; a file of a run that is no config (a checkpoint's JSON, which
    YAML reads too, or ``summary.json``) is a one-line :class:`CanterError` naming the run's ``config.yaml``."""
    data = load_yaml(path)
    what = ("a checkpoint's metadata" if isinstance(data.get("config"), dict) and "format" in data else
            "a run's summary" if "stop_reason" in data and "wall_seconds" in data else None)
    if what is not None:
        folder = Path(path).absolute().parent
        run = next((d for d in (folder, folder.parent) if (d / "config.yaml").is_file()), None)
        instead = f"-f {shlex.quote(str(run / 'config.yaml'))}" if run is not None else "-f RUN_DIR/config.yaml"
        raise CanterError(f"{path} is {what}, not a run config: give its run's config ({instead}); a new run from "
                          f"a checkpoint's weights is --set init_from=CHECKPOINT")
    return data


def config_imports(value: Any, where: str = "imports") -> list[str]:
    """Import the modules of a config's ``imports`` (a list of module names, or one name; a ``--set``
    string is YAML) and return them; a malformed entry or a module that fails to import is a one-line
    :class:`CanterError`."""
    from canter.config_values import coerce
    from canter.registry import import_modules

    if value is None:
        return []
    if isinstance(value, str):  # read as the run config will read it ('a, b' is two modules; 'null' is no list)
        value = coerce(list, value, where)
    if isinstance(value, tuple):  # imports=("my_pkg.parts",) in Python, as every list setting takes a tuple
        value = list(value)
    if not isinstance(value, list) or not all(isinstance(m, str) and m.strip() for m in value):
        raise CanterError(f"'{where}' must be a list of module names, e.g. [my_pkg.components], got {value!r:.200}")
    modules = [m.strip() for m in value]
    import_modules(modules, f" ({where})")
    return modules


def import_config_imports(config_file: str | Path | None, run_overrides: dict[str, Any],
                          sets: list[str] | tuple | str | None = ()) -> list[str]:
    """Import the ``imports`` a run config will have (``config_file`` < ``run_overrides`` < ``sets``)
    before anything looks a name up (:func:`resolve_config` does it too); returns the modules."""
    file_data = load_config_file(config_file) if config_file is not None and str(config_file).strip() else {}
    return config_imports(layered_imports(file_data, run_overrides, sets))


def config_algo(config_file: str | Path | None) -> str | None:
    """The algorithm that the config file ``config_file`` names (its ``algo`` key: a run's ``config.yaml`` has one),
    for a run that names none itself (``canter train -f RUN/config.yaml``); None without a file or an ``algo``. An
    ``algo`` that is no name (a list, a number) is a one-line :class:`CanterError` naming the file."""
    if config_file is None or not str(config_file).strip():
        return None
    algo = load_config_file(config_file).get("algo")
    if algo is not None and not isinstance(algo, str):  # algo: [ppo], algo: 5: named as the file's, as resolve_config
        from canter.config_errors import algo_value_error  # does where the command names the algorithm

        raise algo_value_error(algo, str(config_file))
    return None if isinstance(algo, str) and not algo.strip() else algo


def layered_imports(file_data: dict[str, Any], run_overrides: dict[str, Any],
                    sets: list[str] | tuple | str | None) -> Any:
    """The ``imports`` a run config will have (-f file < arguments < ``--set``), before any name is looked up."""
    value = file_data.get("imports") if isinstance(file_data, dict) else None
    value = run_overrides.get("imports", value)
    from canter.config_layers import set_list

    for item in set_list(sets):
        key, sep, raw = str(item).partition("=")
        if sep and key.strip() == "imports":
            value = raw.strip()
    return value
