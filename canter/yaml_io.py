"""Reading YAML for configs: PyYAML's safe loader, refusing duplicate keys, with malformed input as
one-line :class:`~canter.errors.CanterError` messages that name the file and line.

Numbers in exponent form without a dot or a signed exponent (``1e-3``, ``1e5``, ``2.5e3``) are floats, as
in YAML 1.2 and JSON; PyYAML's YAML 1.1 rules read them as strings, which reached free-form values such
as ``env_kwargs`` unconverted. :func:`dump_yaml` quotes strings that look like such numbers. YAML 1.1's
octal (``010``) and base-60 (``1:30``) numbers are refused (:func:`_refuse_ambiguous_number`).
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

from canter.errors import CanterError


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key repeated in one mapping (PyYAML keeps the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                key = self.construct_object(key_node, deep=deep)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:  # an unhashable key: the base class reports it
                    continue
                if duplicate:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key '{key}'", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def _refuse_ambiguous_number(loader: yaml.SafeLoader, node: yaml.ScalarNode, number: Any) -> Any:
    """``number``, the value of ``node`` by YAML 1.1's rules, unless those read it in a way nobody writing a config
    means and YAML 1.2 (or Python, as ``--set`` reads it) would not: a leading zero as octal (``seed: 010`` was 8,
    ``--set seed=010`` 10) or colons as base 60 (``max_steps: 1:30`` was 90). Such a number is refused, naming it."""
    text = str(node.value)
    digits = text.replace("_", "").lstrip("+-")
    if ":" in digits:
        problem = f"'{text}' is a base-60 number in YAML 1.1 ({number}); write the number, or quote it for text"
    elif node.tag.endswith(":int") and len(digits) > 1 and digits[0] == "0" and digits[1] not in "bx":
        problem = (f"'{text}' is an octal number in YAML 1.1 ({number}); write it without the leading zero, "
                   "or quote it for text")
    else:
        return number
    raise yaml.constructor.ConstructorError(None, None, problem, node.start_mark)


_StrictLoader.add_constructor("tag:yaml.org,2002:int", lambda loader, node: _refuse_ambiguous_number(
    loader, node, loader.construct_yaml_int(node)))
_StrictLoader.add_constructor("tag:yaml.org,2002:float", lambda loader, node: _refuse_ambiguous_number(
    loader, node, loader.construct_yaml_float(node)))

#: YAML 1.1's floats (PyYAML's resolver) plus the exponent forms YAML 1.2 and JSON also read as floats
_FLOAT = re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)
    |[-+]?\.[0-9][0-9_]*(?:[eE][-+]?[0-9]+))$""", re.X)
_StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


class _Dumper(yaml.SafeDumper):
    """``yaml.SafeDumper`` that quotes strings the loader would read as floats (``'1e5'``)."""


_Dumper.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))


def written_unquoted_as(text: str) -> Any:
    """What the string ``text`` reads back as from a YAML file that wrote it unquoted (``yaml.safe_dump``
    before :func:`dump_yaml`): a float for ``'1e5'``, which PyYAML's YAML 1.1 rules took for a string."""
    return float(text) if _FLOAT.match(text) else text


def dump_yaml(data: Any) -> str:
    """``yaml.safe_dump(data, sort_keys=False)``, with strings that :func:`safe_load` would read as
    numbers (``'1e5'``) quoted, so that the text reads back as ``data``."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False)


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict, refusing a repeated key as the YAML loader does."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key '{key}'")
        out[key] = value
    return out


def _as_json(text: str, exc: yaml.YAMLError) -> Any:
    """``text`` read as JSON, which PyYAML refused (``exc``, raised again if JSON does not read it either): JSON is
    YAML 1.2, but PyYAML takes no tab in it, and JSON files are often indented with tabs (``json.dump(indent='\\t')``)."""
    import json

    if not text.lstrip().startswith(("{", "[")):
        raise exc
    try:
        return json.loads(text, object_pairs_hook=_json_pairs)
    except (ValueError, RecursionError):
        raise exc from None


#: Unicode spaces that YAML reads as text, not as a space (a no-break space pasted from a web page or a document)
_ODD_SPACE = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_BREAKS = re.compile("\r\n|[\r\n\x85\u2028\u2029]")


def _odd_space(text: str) -> yaml.YAMLError | None:
    """The error for the first Unicode space (:data:`_ODD_SPACE`) in ``text`` outside quotes and comments, else None:
    YAML reads it as part of a word, so ``n_envs:<no-break space>2`` was no key (an error naming no cause),
    ``{max_episode_steps:<no-break space>100}`` the key ``'max_episode_steps: 100'`` without a value, and a line
    indented with them a new top-level key."""
    if not _ODD_SPACE.search(text):
        return None
    found: tuple[int, int, str] | None = None  # (line, column, the space)
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if isinstance(token, yaml.ScalarToken) and token.plain:
                start = token.start_mark
                match = _ODD_SPACE.search(text, start.index, token.end_mark.index)
                if match:
                    before = _BREAKS.split(text[start.index:match.start()])
                    line = start.line + len(before) - 1
                    found = (line, (start.column if len(before) == 1 else 0) + len(before[-1]), match[0])
                    break
    except yaml.YAMLError as exc:  # one in a key can stop the scan first: look in the lines it names
        lines = _BREAKS.split(text)
        for mark in (getattr(exc, "context_mark", None), getattr(exc, "problem_mark", None)):
            column = _plain_odd_space(lines[mark.line]) if mark and mark.line < len(lines) else None
            if column is not None:
                found = (mark.line, column, lines[mark.line][column])
                break
    if found is None:
        return None
    import unicodedata

    line, column, space = found
    name = unicodedata.name(space, "space").lower()
    return yaml.scanner.ScannerError(
        None, None, f"a {name} (U+{ord(space):04X}), which YAML reads as part of the text, not as a space: retype it "
        f"as a space (or quote the text)", yaml.Mark("<text>", 0, line, column, None, None))


def _plain_odd_space(line: str) -> int | None:
    """The column of the first Unicode space (:data:`_ODD_SPACE`) on ``line`` outside quoted text and a comment, else
    None. A scan error's line is searched so: one whose quoted text held such a space ('x: "a<no-break space>b": c')
    had its own error (a misplaced colon, a bad indent) reported as that space, which quoting text would mend."""
    quote, prev, i = "", " ", 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and quote == '"':  # an escape: the next character is text
                i += 1
            elif c == quote and quote == "'" and line[i + 1:i + 2] == "'":  # '' inside single quotes
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"" and prev in " \t:-[{,?":  # a quote that starts a scalar (not the one in it's)
            quote = c
        elif c == "#" and prev in " \t":
            return None
        elif _ODD_SPACE.match(c):
            return i
        prev, i = c, i + 1
    return None


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` that refuses duplicate keys (and reads JSON indented with tabs, which PyYAML refuses), and
    a Unicode space outside quotes (:func:`_odd_space`)."""
    odd = _odd_space(text)
    if odd is not None:
        raise odd
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        if "'\\t'" not in str(getattr(exc, "problem", "")):
            raise
        data = _as_json(text, exc)
    except ValueError as exc:  # int() of a digit string over Python's limit (sys.get_int_max_str_digits)
        if "integer string conversion" not in str(exc):
            raise
        raise yaml.constructor.ConstructorError(
            None, None, f"an integer with more than {sys.get_int_max_str_digits()} digits") from None
    except RecursionError:  # PyYAML parses nested collections recursively: [[[[...]]]] a few hundred deep
        raise yaml.constructor.ConstructorError(None, None, f"{_NESTING_PROBLEM}") from None
    _check_nesting(data)
    _check_size(data)
    return data


#: deeper collections are refused: PyYAML's parser, and canter's checks of config values, recurse into them
MAX_NESTING = 100
_NESTING_PROBLEM = f"collections nested more than {MAX_NESTING} deep, or an alias inside its own anchor"


def _check_nesting(data: Any) -> None:
    """Refuse collections nested deeper than :data:`MAX_NESTING` and recursive aliases (``&a [*a]``, which
    PyYAML builds as a list inside itself): the code that reads config values recurses into them."""
    stack, deepest = [(data, 0)], {}  # deepest: id -> the greatest depth a shared (aliased) node was seen at
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (list, dict)) and deepest.get(id(node), -1) < depth:
            if depth >= MAX_NESTING:  # a recursive alias is endlessly deep
                raise yaml.constructor.ConstructorError(None, None, _NESTING_PROBLEM)
            deepest[id(node)] = depth
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))


#: more values, counting each alias as a copy of its anchor's, are refused: canter's checks of config values and
#: config.yaml walk every copy (ten lists of ten aliases, nine deep, were 541 bytes and a billion values: a hang)
MAX_VALUES = 1_000_000


def _check_size(data: Any) -> None:
    """Refuse a document of more than :data:`MAX_VALUES` values once its aliases are expanded (after
    :func:`_check_nesting`, which refuses the recursive ones); each shared collection is counted once, by id."""
    sizes: dict[int, int] = {}  # id of a collection -> its values, aliases expanded
    stack = [(data, False)]
    while stack:
        node, done = stack.pop()
        if not isinstance(node, (list, dict)) or (not done and id(node) in sizes):
            continue
        children = list(node.values()) if isinstance(node, dict) else node
        if not done:
            stack.append((node, True))
            stack.extend((child, False) for child in children)
            continue
        sizes[id(node)] = 1 + sum(sizes.get(id(child), 1) for child in children)
        if sizes[id(node)] > MAX_VALUES:
            raise yaml.constructor.ConstructorError(
                None, None, f"aliases repeat their anchors into more than {MAX_VALUES:,} values; a config holds a "
                            "few hundred")


def parse_yaml_value(text: str, key: str) -> Any:
    """``text`` (a ``--set`` value) as YAML; malformed YAML is a one-line CanterError naming ``key``."""
    try:
        value = safe_load(text)
    except yaml.YAMLError as exc:
        raise CanterError(f"'{key}': cannot parse {text!r} as YAML: {_problem(exc)}") from None
    _refuse_glued_key(value, text, f"'{key}'", f" in {text!r}")
    return value


def _problem(exc: yaml.YAMLError) -> str:
    """What PyYAML's error ``exc`` says is wrong, in one line; a tab it cannot take (PyYAML's words: "found character
    '\\t' that cannot start any token") is named as one, with what to write instead."""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if "'\\t'" in problem:
        problem = ("a tab, which YAML does not take for indentation (nor PyYAML after a colon or comma, or at the end "
                   "of a line): use spaces")
    return problem


def glued_word(text: Any) -> str:
    """``"; YAML reads 'lr:0.001' as one word: a key's colon needs a space after it (lr: 0.001)"`` where the string
    ``text`` starts with a key glued to its value (a mapping entry written without the space), else ``""``."""
    words = text.split() if isinstance(text, str) else []
    match = re.fullmatch(r"([A-Za-z_]\w*):([^\s:].*)", words[0]) if words else None
    return (f"; YAML reads '{words[0]}' as one word: a key's colon needs a space after it ({match[1]}: {match[2]})"
            if match else "")


def dashed_pairs(value: Any) -> str:
    """``"; its entries are written as list items ('- lr: ...'): drop the '- ' before each"`` where ``value`` (read
    where a mapping belongs) is a list of one-entry mappings, the mapping's lines written with dashes; else ``""``."""
    if isinstance(value, list) and value and all(isinstance(v, dict) and len(v) == 1 for v in value):
        return f"; its entries are written as list items ('- {next(iter(value[0]))}: ...'): drop the '- ' before each"
    return ""


def _glued_line(text: str, mark: Any) -> str | None:
    """`` line N: ...`` naming the line at or just before PyYAML's error ``mark`` that starts with a key glued to its
    value (``lr:0.001`` below ``seed: 1`` is 'could not find expected ':'' on the next line), or None."""
    lines = text.splitlines()
    for index in (mark.line, mark.line - 1) if mark is not None else ():
        if 0 <= index < len(lines) and not lines[index].lstrip().startswith(("-", "#")):
            hint = glued_word(lines[index])
            if hint:
                return f" line {index + 1}: {hint[2:]}"
    return None


def _refuse_glued_key(value: Any, text: str, where: str, within: str = "") -> None:
    """Raise a CanterError naming ``where`` if ``value``, parsed from ``text``, has a :func:`_glued_key`."""
    glued = _glued_key(value, text)
    if glued is not None:
        name, rest = glued.split(":", 1)
        raise CanterError(f"{where}: YAML reads {glued!r}{within} as one key without a value: a key's colon needs "
                          f"a space after it ({name}: {rest})")


def _glued_key(value: Any, text: str) -> str | None:
    """A key of a flow mapping in ``value`` written as an unquoted ``name:value`` with no colon of its own
    (``{is_slippery:false}``: without a space after the colon YAML reads one key ``'is_slippery:false'`` of value
    null, which reached the env's constructor as an unknown argument), or None."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            for k, v in node.items():
                if (v is None and isinstance(k, str) and re.fullmatch(r"[A-Za-z_]\w*:\S.*", k)
                        and re.search(r"(^|[{,\s])" + re.escape(k) + r"\s*[,}]", text)):  # no colon of its own
                    return k
                stack.append(v)
    return None


#: larger YAML files are refused unread: a config is a few kilobytes, PyYAML reads ~50 kB a second, and a wrong
#: path (-f /dev/zero, a checkpoint, a dataset) was read whole into memory before anything was said
MAX_BYTES = 1 << 20


def _nearby_yaml(path: Path) -> str:
    """``"; did you mean 'run.yaml'?"`` naming the YAML files beside the missing ``path`` that look most like it
    (``config.yml`` for a run's ``config.yaml``), or ``""``."""
    from canter.errors import closest

    try:
        files = [p for p in path.parent.iterdir() if p.suffix in (".yaml", ".yml")] if path.parent.is_dir() else []
    except OSError:
        return ""
    stems = {p.stem: p for p in files}  # compared without the suffix every one of them shares
    near = closest(path.stem, stems)
    return ("; did you mean " + " or ".join(f"'{stems[n]}'" for n in near) + "?") if near else ""


def load_yaml(path: str | Path, what: str = "config file") -> dict[str, Any]:
    """Read a YAML mapping; malformed YAML is a CanterError that names the file and line, as is a file
    larger than :data:`MAX_BYTES`. ``what`` names the file in those errors (``--space file``)."""
    path = Path(path)
    try:
        with path.open("rb") as f:
            data = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise CanterError(f"{what} not found: {path}{_nearby_yaml(path)}") from None
    except IsADirectoryError:  # -f RUN_DIR
        inside = path / "config.yaml"
        hint = f"; its run config is {inside}" if inside.is_file() else "; give a YAML file"
        raise CanterError(f"{what} {path} is a directory{hint}") from None
    except OSError as exc:
        raise CanterError(f"cannot read {what} {path}: {exc.strerror}") from None
    if len(data) > MAX_BYTES:
        raise CanterError(f"{what} {path} is larger than {MAX_BYTES // 2**20} MiB; a config is a few "
                          "key: value lines (is it the right file?)")
    # a byte order mark (Windows editors) is no text: JSON refused it; UTF-16 with one (PowerShell's '>') is read
    # as YAML reads it (it was 'not UTF-8 text', no word of why)
    encoding = "utf-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig"
    utf16 = encoding != "utf-16" and b"\x00" in data[:200]  # ASCII text in UTF-16: every other byte a zero
    try:
        text = None if utf16 else data.decode(encoding)
    except UnicodeDecodeError:
        text = None
    if text is None:
        raise CanterError(f"{what} {path} is not UTF-8 text" + (
            " (it looks like UTF-16 without a byte order mark: re-save it as UTF-8, e.g. PowerShell's "
            "'Out-File -Encoding utf8', or Notepad's Save As > Encoding UTF-8)" if utf16 else "")) from None
    try:
        data = safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        glued = _glued_line(text, mark)
        if glued is not None:
            raise CanterError(f"malformed YAML in {path}{glued}") from None
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise CanterError(f"malformed YAML in {path}{where}: {_problem(exc)}") from None
    _refuse_glued_key(data, text, str(path))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CanterError(f"{path} must hold a YAML mapping (key: value lines), got {type(data).__name__}"
                          f"{glued_word(data)}{dashed_pairs(data)}")
    return data
