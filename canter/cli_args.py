"""Argument parsing pieces of the ``canter`` command: a parser whose errors are one line, the
``-f/--config`` file given once, integer flags in exponent form, and reading a flag's value from
``argv`` before parsing (:mod:`canter.cli` uses them; the tools' subcommands too)."""
from __future__ import annotations

import argparse
import shlex
from typing import Any

from canter.errors import CanterError

#: help strings of options several commands take
ENV_KWARGS_HELP = ("env constructor arguments as a YAML mapping, e.g. '{is_slippery: false}' (merged over the "
                   "run's env_kwargs when the env is the run's own)")
DEVICE_HELP = "act on this torch device: cpu, cuda, cuda:N or auto (default: the run's, where present, else cpu)"
#: ``canter train ALGO --help`` of an offline algorithm (bc, cql, td3bc): its steps are gradient updates
OFFLINE_RUN_HELP = {
    "max_steps": "gradient-update budget (an offline run steps no env: its steps are updates)",
    "eval_every": "evaluate every N gradient updates",
    "checkpoint_every": "save a periodic checkpoint (step-N) every N gradient updates (default 50000; 0: none)",
    "n_envs": "unused: an offline run steps no training env (a value other than 1 is warned about)",
    "record_every": "record an evaluation episode as MP4 in RUN_DIR/videos every N gradient updates (needs the "
                    "'video' extra)",
    "keep_checkpoints": "keep only the newest K periodic checkpoints (step-N, saved every checkpoint_every gradient "
                        "updates); best and last are always kept (default: keep all)",
}


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line and exit code 2.

    Long options must be spelled out: argparse's prefix matching would silently take e.g. ``--n-step``
    (DQN's n-step return) for PPO's ``--n-steps``. An unknown option is answered with the closest one.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """argparse's, keeping ``args`` for :meth:`explain`."""
        self.argv = list(args) if args is not None else None
        return super().parse_args(args, namespace)

    def explain(self, message: str) -> str:
        """``message``, plus the closest valid option when it names an unrecognized one."""
        empty = empty_flag_value(message)
        if empty is not None:
            return empty
        if message.startswith("unrecognized arguments:"):
            from canter.errors import closest

            for token in message.split(":", 1)[1].split():
                if token.startswith("--"):
                    options = [o for o in self._option_string_actions if o.startswith("--") and o != "--help"]
                    # --learning-rate is --lr, not the closest spelling (Tianshou's --test-num: --eval-envs)
                    from canter.config_errors import OTHER_NAMES, TIANSHOU_NAMES

                    name = token.split("=", 1)[0][2:].replace("-", "_")
                    # a run key without a flag of its own (--early-stopping) is given with --set: it was answered
                    # with flags that only looked alike ('--log-std-init')
                    set_only = self._set_only_keys(options)
                    # a misspelt other library's name (--learnin-rate) as the name, as its config key is answered:
                    # it was '--clip-range'
                    library = _library_name(token.split("=", 1)[0], getattr(self, "algo", None), options, set_only)
                    ours = OTHER_NAMES.get(library or name) or TIANSHOU_NAMES.get(library or name, "")
                    near = [o for o in (f"--{ours.replace('_', '-')}",) if ours and (o in options or o in set_only)]
                    names_ours = bool(near)  # the answer names canter's own flag (or --set key) for the name
                    # Tianshou's --estimation-step for ppo: canter's --n-step is dqn's, c51's, ...
                    theirs = f"--{ours.replace('_', '-')}" if ours and not near else None
                    flag = token.split("=", 1)[0]
                    positional = self._positional_named(name)
                    if positional and not near:  # 'canter collect --run-dir runs/x': RUN_DIR takes no flag
                        return f"{message}; {positional} is given without a flag: {self.prog} {positional}"
                    from canter.config_errors import ENV_MAKE_KEYS, SB3_ONLY

                    if name in SB3_ONLY and "--set" in options and flag not in options and flag not in set_only:
                        # --min-evals, --policy-kwargs, --verbose: as their config keys are (it was the closest spellings)
                        return f"{message}; Stable-Baselines3's {name}: {SB3_ONLY[name]}"

                    if name in ENV_MAKE_KEYS and "--env-kwargs" in options:  # it was '--max-steps', the step budget
                        also = f" (or --set env_kwargs.{name}=VALUE)" if "--set" in options else ""
                        return (f"{message}; {name} is an argument of the env's gymnasium.make: --env-kwargs "
                                f"'{{{name}: VALUE}}'{also}")
                    near = near or ([flag] if flag in set_only else
                                    same_meaning(name, [*options, *set_only]) or closest(flag, [*options, *set_only]))
                    near = [set_only.get(o, o) for o in near]
                    algo = getattr(self, "algo", None)  # canter train ALGO's: --tau for ppo is sac's, td3's, ...
                    if algo is not None and flag not in set_only:
                        from canter.config_errors import other_owners

                        owners = other_owners(ours if theirs else name, algo) if theirs or not ours else None
                        message += ("" if owners is None else f": canter calls it {theirs}, but {owners}" if theirs
                                    else f": {owners} (a flag of another algorithm?)")
                        misspelt = _other_algorithms_flag(flag, algo, options, set_only) if (
                            owners is None and not ours and not same_meaning(name, [*options, *set_only])) else None
                        if misspelt is not None:  # --learning-start for ppo: dqn's --learning-starts, as its key's
                            return f"{message}; {misspelt}"
                    if near:
                        from canter.config_errors import ONE_MORE, PER_VECTOR_STEP, one_more_note

                        # SB3's --eval-freq counts vector steps: ported as it is, it evaluated n_envs times as often
                        sb3 = library or name
                        per_step = (f" (Stable-Baselines3's {sb3} counts its callback's calls, one per vector step; "
                                    f"canter's {ours} counts the env steps of all the env copies: {sb3} x n_envs)"
                                    if sb3 in PER_VECTOR_STEP and names_ours else "")  # (not '--device' in eval)
                        if sb3 in ONE_MORE and names_ours:  # --max-no-improvement-evals: one evaluation early as it is
                            per_step = f" (Stable-Baselines3's {sb3} {one_more_note(sb3, ours)})"
                        return f"{message}; did you mean " + " or ".join(f"'{o}'" for o in near) + f"?{per_step}"
                    break
                if "=" in token and "--set" in self._option_string_actions:  # '--set a=1 b=2'
                    return f"{message}; one KEY=VALUE per --set: --set {token}"
            return message + split_value(getattr(self, "argv", None), message.split(":", 1)[1].split())
        return message + self._closest_choice(message)

    def _closest_choice(self, message: str) -> str:
        """``"; did you mean 'async'?"`` for argparse's ``argument --vectorization: invalid choice: 'asnyc'
        (choose from ...)``, naming the closest of the option's choices (as ``--set vectorization=asnyc`` does);
        ``""`` for any other message or no close choice."""
        import re

        from canter.errors import closest

        found = re.match(r"argument (\S+?)(?:/\S+)?: invalid choice: (.+?) \(choose from", message)
        action = self._option_string_actions.get(found.group(1)) if found else None
        if action is None or not action.choices:
            return ""
        near = closest(found.group(2).strip("'\""), [str(c) for c in action.choices])
        return "; did you mean " + " or ".join(f"'{c}'" for c in near) + "?" if near else ""

    def _positional_named(self, name: str) -> str | None:
        """The metavar (``RUN_DIR``) of this parser's positional argument called ``name`` (``run_dir``), else None."""
        for action in self._positionals._group_actions:
            if action.dest == name and action.dest != "help":
                return action.metavar if isinstance(action.metavar, str) else action.dest.upper()
        return None

    def _set_only_keys(self, options: list[str]) -> dict[str, str]:
        """Run-config keys, and the hyperparameters of the parser's ``algo`` (``canter tune``'s), that this parser
        takes only through ``--set``: ``--early-stopping`` -> how to give it (``--set early_stopping=VALUE``); none
        where the parser has no ``--set``."""
        if "--set" not in self._option_string_actions:
            return {}
        import dataclasses

        from canter.config import RunConfig

        dashed = {f"--{f.name.replace('_', '-')}": f.name for f in dataclasses.fields(RunConfig) if f.name != "algo"}
        algo = getattr(self, "algo", None)
        if algo is not None:  # canter tune ALGO takes the hyperparameters through --set alone ('--gamma': '--dataset')
            from canter.builtins import algorithm_info

            dashed.update({f"--{row[0].replace('_', '-')}": row[0] for row in algorithm_info(algo)["hparams"]})
        return {o: f"--set {k}=VALUE" for o, k in dashed.items() if o not in options}

    def error(self, message: str) -> None:  # type: ignore[override]
        raise CanterError(self.explain(message))


#: flag names that mean one thing, however a command spells it (Stable-Baselines3 / rl-zoo3, Optuna, argparse
#: habits): the closest spelling misled ('canter collect --steps' was answered '--epsilon' or '--seed', 'canter
#: tune --run-dir' '--prune-warmup'); an unknown flag of a group is answered with the group's flags the command has
FLAG_SYNONYMS = (
    {"out", "output", "outdir", "out_dir", "output_dir", "output_path", "run_dir", "log_dir", "logdir", "log_folder",
     "save_dir", "save_path", "dir", "directory", "folder", "video_dir"},
    {"steps", "timesteps", "total_timesteps", "n_timesteps", "num_timesteps", "max_steps", "num_steps",
     "total_steps", "transitions", "n_transitions", "num_transitions", "n_samples", "samples", "budget"},
    {"episodes", "n_episodes", "num_episodes", "eval_episodes", "n_eval_episodes", "n_eval"},
    {"trials", "n_trials", "num_trials"},
    {"jobs", "n_jobs", "num_jobs", "workers", "n_workers", "num_workers", "processes", "n_procs", "n_proc"},
    {"n_envs", "num_envs", "envs", "n_env", "num_env"},
    {"env", "env_id", "env_name", "environment", "gym_id", "task"},
    {"epsilon", "eps", "exploration", "exploration_rate", "random_prob"},
    {"eval_every", "eval_freq", "eval_interval", "eval_frequency", "evaluation_interval"},
)


def _other_algorithms_flag(flag: str, algo: str, options: list[str], set_only: dict[str, str]) -> str | None:
    """``"did you mean '--learning-starts'? ppo has no hyperparameter 'learning_starts', c51, ... have one (a flag of
    another algorithm?)"`` for an unknown ``flag`` of ``canter train ALGO`` that looks most like another algorithm's
    hyperparameter (as :func:`canter.config_errors._other_name` answers its config key); None where one of
    ``options`` or ``set_only`` (``algo``'s own), or another library's name (``--learnin-rate``), looks closer, or
    where it is only loosely alike (``--algos``, the positional ALGO misspelt, is not ``--n-atoms``)."""
    import difflib

    from canter.config_errors import _other_hparams, other_owners

    others = {f"--{h.replace('_', '-')}": h for h in _other_hparams(algo)}
    near = _nearest(flag, algo, options, set_only)
    if not near or near[0] not in others or near[0] in options or near[0] in set_only:
        return None
    if difflib.SequenceMatcher(None, flag.lower(), near[0].lower()).ratio() < 0.75:
        return None
    return f"did you mean '{near[0]}'? {other_owners(others[near[0]], algo)} (a flag of another algorithm?)"


def _nearest(flag: str, algo: str | None, options: list[str], set_only: dict[str, str]) -> list[str]:
    """The one flag ``flag`` looks most like among ``options``, ``set_only``, other libraries' names
    (``--learning-rate``) and, with ``algo``, the other algorithms' hyperparameters; [] for none close."""
    from canter.config_errors import OTHER_NAMES, TIANSHOU_NAMES, _other_hparams
    from canter.errors import closest

    others = [f"--{h.replace('_', '-')}" for h in _other_hparams(algo)] if algo else []
    libraries = [f"--{n.replace('_', '-')}" for n in [*OTHER_NAMES, *TIANSHOU_NAMES]]
    return closest(flag, [*options, *set_only, *libraries, *others], n=1)


def _library_name(flag: str, algo: str | None, options: list[str], set_only: dict[str, str]) -> str | None:
    """The other library's name (``learning_rate``) that the unknown ``flag`` (``--learnin-rate``) looks most like,
    as :func:`canter.config_errors._other_name` takes its config key (``learnin_rate``); None where an option of the
    parser, a ``--set`` key or another algorithm's hyperparameter looks closer, or none is close."""
    import difflib

    from canter.config_errors import OTHER_NAMES, TIANSHOU_NAMES

    near = _nearest(flag, algo, options, set_only)
    name = near[0][2:].replace("-", "_") if near else ""
    if not near or near[0] in options or near[0] in set_only or name not in {**OTHER_NAMES, **TIANSHOU_NAMES}:
        return None
    # only a close misspelling: '--run-dir' looks most like '--learning-rate' of these, loosely
    return name if difflib.SequenceMatcher(None, flag.lower(), near[0].lower()).ratio() >= 0.75 else None


def same_meaning(name: str, options: list[str]) -> list[str]:
    """The flags among ``options`` (``--out``) that say what the unknown flag ``name`` (``run_dir``, dashes as
    underscores) does in other tools (:data:`FLAG_SYNONYMS`); [] for a name of no group, or none of its flags."""
    for group in FLAG_SYNONYMS:
        if name in group:
            return [o for o in options if o[2:].replace("-", "_") in group and o[2:].replace("-", "_") != name]
    return []


def split_value(argv: list[str] | None, extra: list[str]) -> str:
    """``"; the shell split a value at its spaces: quote it, --set 'net_arch=[64, 64]'"`` where the unrecognized
    arguments ``extra`` begin with the rest of a value of ``argv`` that opened a bracket the shell's split left
    unclosed (``--set net_arch=[64, 64]`` unquoted was 'unrecognized arguments: 64]' alone); ``"; --set takes
    KEY=VALUE as one word: --set lr=0.1"`` where they begin with the value of a ``--set KEY VALUE``; else ``""``."""
    if not argv or not extra or extra[0] not in argv:
        return ""
    # '--set lr 0.1': 'unrecognized arguments: 0.1' alone; the 0.1 after '--set lr', not an earlier flag's equal value
    # ('--gamma 0.1 --set lr 0.1'), and a value the shell split too ('--set net_arch [64, 64]')
    for i in (k for k, a in enumerate(argv) if a == extra[0] and k >= 2):
        if argv[i - 2] == "--set" and "=" not in argv[i - 1]:
            end = i + 1
            while _depth(argv[i:end]) > 0 and end < len(argv) and not argv[end].startswith("--"):
                end += 1
            value = " ".join(argv[i:end] if _depth(argv[i:end]) <= 0 else argv[i:i + 1])
            return f"; --set takes KEY=VALUE as one word: --set {shlex.quote(f'{argv[i - 1]}={value}')}"
    i = argv.index(extra[0])
    if i < 2 or not argv[i - 2].startswith("-"):
        return ""
    end = i
    while _depth(argv[i - 1:end]) > 0 and end < len(argv) and not argv[end].startswith("--"):
        end += 1
    if end == i or _depth(argv[i - 1:end]) > 0:
        return ""
    return f"; the shell split a value at its spaces: quote it, {argv[i - 2]} '{' '.join(argv[i - 1:end])}'"


def _depth(tokens: list[str]) -> int:
    """The brackets ``tokens`` leave open: ``1`` for ``['[64,']``, ``0`` for ``['[64,', '64]']``."""
    return sum(t.count(c) for t in tokens for c in "[{(") - sum(t.count(c) for t in tokens for c in "]})")


class ResumeParser(_Parser):
    """The parser of ``canter train --resume``: its errors say which options may come with ``--resume``."""

    def explain(self, message: str) -> str:
        """``message``, with the closest resume option for a misspelt one (``--max-step``), but none for a new
        run's argument (``ppo --env``, ``--lr``, ``--set``), which --resume does not take: the closest spelling
        answered ``--lr`` with '--resume' and ``--set`` with '--dataset'."""
        if message.startswith("unrecognized arguments:"):
            first = next((t.split("=", 1)[0] for t in message.split(":", 1)[1].split() if t.startswith("-")), None)
            if first is None or first in _new_run_options():
                return message
        return super().explain(message)

    def error(self, message: str) -> None:  # type: ignore[override]
        from canter.resume_settings import RESUME_OPTIONS

        if empty_flag_value(message) is not None:  # a flag it takes, given empty: no word of the options it takes
            raise CanterError(empty_flag_value(message))
        raise CanterError(f"{self.explain(message)} (--resume continues a run with its saved config; only "
                          f"{RESUME_OPTIONS} may be given with it)")


def _new_run_options() -> set[str]:
    """The options of ``canter train ALGO``: its run flags and every built-in algorithm's hyperparameter flags."""
    from canter.builtins import manifest
    from canter.cli_parsers import _train_parser

    options = {s for a in _train_parser("canter train", None)._actions for s in a.option_strings}
    return options | {f"--{row[0].replace('_', '-')}" for info in manifest()["algorithms"].values()
                      for row in info["hparams"]}


class ConfigFileAction(argparse.Action):
    """``-f/--config FILE``, given once: a second file replaced the first without a word (while the
    ``imports`` of the first were imported)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        previous = getattr(namespace, self.dest, None)
        if previous is not None:
            raise _config_twice(previous, values)
        setattr(namespace, self.dest, values)


def _config_twice(first: str, second: str) -> CanterError:
    return CanterError(f"-f/--config is given twice ('{first}', '{second}'); a run takes one config file: "
                       "put the settings in one file, or give the other ones with --set KEY=VALUE")


def _config_file_arg(argv: list[str]) -> str | None:
    """The ``-f/--config`` file that ``argv`` gives (``-f F``, ``-fF``, ``-f=F``, ``--config F``, ``--config=F``),
    as argparse will read it; given twice, the error :class:`ConfigFileAction` gives."""
    files = []
    for i, a in enumerate(argv):
        if a in ("-f", "--config"):
            if i + 1 < len(argv):
                files.append(argv[i + 1])
        elif a.startswith("--config="):
            files.append(a.split("=", 1)[1])
        elif a.startswith("-f") and not a.startswith("--"):
            files.append(a[3:] if a.startswith("-f=") else a[2:])
    if len(files) > 1:
        raise _config_twice(files[0], files[1])
    return files[0] if files else None


def file_algo(config_file: str, command: str = "canter train") -> str:
    """The algorithm named by ``config_file``'s ``algo`` key, for ``canter train -f FILE`` (``command``) without an
    algorithm; a file without one is a one-line error saying how to name it."""
    from canter.config_imports import check_config_path, config_algo

    check_config_path(config_file)  # -f '' was "no algorithm given, and  has no 'algo' key", the path left blank
    algo = config_algo(config_file)
    if algo is None:
        from canter.config_errors import zoo_section
        from canter.config_imports import load_config_file

        # an rl-zoo3 file (ppo.yml: one section per env) is told first, as for a missing --env
        zoo = next(filter(None, (zoo_section(k, v, str(config_file)) for k, v in load_config_file(config_file).items()
                                 if isinstance(k, str))), None)
        if zoo is not None:
            raise CanterError(f"{zoo}; and name the algorithm: {command} ALGO -f {shlex.quote(str(config_file))}")
        raise CanterError(f"no algorithm given, and {config_file} has no 'algo' key: name it, {command} ALGO -f "
                          f"{shlex.quote(str(config_file))} (canter list shows the algorithms), or add 'algo: ALGO' "
                          f"to the file")
    return algo


def with_file_algo(argv: list[str], algo: str | None) -> tuple[list[str], str | None]:
    """``(argv, algo)`` of ``canter train``, where ``algo`` is the algorithm its arguments name: when they name none
    and give ``-f FILE``, FILE's algorithm (:func:`file_algo`) is put first in ``argv``."""
    config_file = _config_file_arg(argv)
    if algo is not None or config_file is None:
        return argv, algo
    if ("-h" in argv or "--help" in argv) and str(config_file).strip():
        from canter.config_imports import config_algo

        if config_algo(config_file) is None:  # the help, without an algorithm's flags (not 'no algorithm given')
            return argv, None
    algo = file_algo(config_file)
    return [algo, *argv], algo


def empty_flag_value(message: str) -> str | None:
    """argparse's refusal of a flag given an empty or blank value (``argument --seed: invalid int value: ''``) in the
    words an empty ``--set`` has (``--seed must be an int, got an empty value``; a flag of choices names them:
    ``--vectorization got an empty value; choices: ...``); None for any other message."""
    import re

    found = re.fullmatch(r"argument (\S+?)(?:/\S+)?: invalid (int value|float value|value|choice): '\s*'(?: \((.*)\))?",
                         message)
    if found is None:
        return None
    flag, kind, rest = found.groups()
    if kind == "choice":  # (choose from 'auto', 'native', ...)
        return f"{flag} got an empty value; choices: {(rest or '').removeprefix('choose from ').replace(chr(39), '')}"
    if kind == "value":  # a flag of its own type, whose error says what it takes: '(seconds, or null)'
        return f"{flag} got an empty value" + (f"; give {rest}" if rest else "")
    return f"{flag} must be {'an int' if kind == 'int value' else 'a float'}, got an empty value"


def int_arg(text: str) -> int:
    """The value of an integer flag; a whole number in exponent form (``--max-steps 1e6``) is taken as a
    config file or ``--set max_steps=1e6`` takes it. Anything else is argparse's 'invalid int value'."""
    from canter.config import coerce

    try:
        return coerce(int, text, "value")
    except CanterError:
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None


class _Null:
    """What a flag taking a number or ``null`` gives for ``null`` (:func:`number_or_null_arg`): the setting dropped."""

    def __repr__(self) -> str:
        return "null"


#: the value of ``--target-reward null`` / ``--max-seconds null``: the run key set to null (a preset's value dropped)
NULL = _Null()


def number_or_null_arg(text: str) -> float | _Null:
    """The value of a flag taking a number or ``null`` / ``none`` (:data:`NULL`: the setting dropped, as ``--set
    KEY=null`` drops it; a shipped preset's ``target_reward`` too). Anything else is a one-line argparse error."""
    if text.strip().lower() in ("null", "none"):
        return NULL
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid value: {text!r} (a number, or null for none)") from None


def _flag_value(argv: list[str], flag: str) -> str | None:
    """The value given to ``flag`` (``--flag V`` or ``--flag=V``), if any."""
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def preset_values(algo: str, env: str | None, info: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run values and hyperparameters that ``algo``'s shipped presets for ``env`` set, for ``--help``; read
    from the YAML files with ``info``'s (:func:`~canter.builtins.algorithm_info`) types, so that canter's own
    algorithms are not imported (torch with them: 1.4 s, where --help without --env took 0.2 s)."""
    if not env:
        return {}, {}
    from canter.builtins import algorithm_name
    from canter.config import RunConfig, coerce, fields_of, preset_layers

    run_types = {name: tp for name, (_, tp) in fields_of(RunConfig).items()}
    hp_types = {name: {"INT": int, "FLOAT": float, "INT_OR_NULL": int | None, "FLOAT_OR_NULL": float | None}.get(
        metavar, Any) for name, metavar, _, _ in info["hparams"]}
    run_values: dict[str, Any] = {}
    hp_values: dict[str, Any] = {}
    try:
        for _, data in preset_layers(algorithm_name(algo), env):
            for key, value in data.items():
                if key == "hparams" and isinstance(value, dict):
                    hp_values.update({k: coerce(hp_types.get(k, Any), v, k) for k, v in value.items()})
                elif key in run_types:
                    run_values[key] = coerce(run_types[key], value, key)
                elif key.removeprefix("hparams.") in hp_types:
                    name = key.removeprefix("hparams.")
                    hp_values[name] = coerce(hp_types[name], value, key)
    except CanterError:
        return {}, {}
    return run_values, hp_values
