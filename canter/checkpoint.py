"""Checkpoints: tensors in safetensors, everything else in JSON. Loading never unpickles.

A checkpoint is a pair ``NAME.safetensors`` + ``NAME.json``. Any nested state (dicts, lists,
tensors, numpy arrays, numbers, strings) is split: tensors and arrays go to the safetensors
file under their path, and the JSON keeps the structure with ``{"__tensor__": key}`` markers.
Both files are written atomically (temp file, fsync, rename), tensors first. The tensors file
also carries the whole JSON metadata in its safetensors header, plus the ``checkpoint_id`` of the
checkpoint it replaces, so it is complete on its own: if a kill lands between the two renames,
the ``.json`` is exactly one save behind, the loader recognises that and uses the header's copy.
A checkpoint name therefore always refers to one complete checkpoint, the new or the previous
one; any other mix of two files (e.g. copied from two runs) is refused.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load as st_load
from safetensors.torch import save_file as st_save_file


from canter.atomic import (  # noqa: F401 (re-exported)
    atomic_path, atomic_write, made_dirs, remove_temp_files, temp_file_target,
)
from canter.checkpoint_content import canonical as _canonical
from canter.checkpoint_content import check_content, check_lone_metadata, content_sha256  # noqa: F401 (re-exported)
from canter.errors import CanterError, check_utf8_path, check_version

FORMAT = "canter-checkpoint"
FORMAT_VERSION = 1


class UnsavableValue(CanterError, TypeError):
    """A value of the state to checkpoint that no checkpoint holds (a set, an object): one line naming its place
    (a user's callback ``state_dict``, an algorithm's ``extra_state``); a ``TypeError`` too, as it was."""


def flatten_state(tree: Any, prefix: str = "") -> tuple[Any, dict[str, torch.Tensor]]:
    """Split ``tree`` into a JSON-safe skeleton and a dict of tensors."""
    tensors: dict[str, torch.Tensor] = {}
    seen: set[tuple[int, int]] = set()

    def walk(node: Any, path: str) -> Any:
        if isinstance(node, torch.Tensor):
            tensors[path] = node.detach().cpu().contiguous()
            return {"__tensor__": path}
        if isinstance(node, np.ndarray):
            # the array's own memory (saving streams from it); a copy only where it would share memory
            # with a tensor taken before (overlapping views of one array cannot be saved as two tensors)
            # (reshaped: ascontiguousarray makes a 0-d array 1-d, and it came back of shape (1,): an env's 0-d
            # array attribute broke its next step after a resume)
            data = np.ascontiguousarray(node).reshape(node.shape)
            key = (data.__array_interface__["data"][0], data.nbytes)
            tensors[path] = torch.from_numpy(data.copy() if key in seen else data)
            seen.add(key)
            return {"__ndarray__": path}
        if isinstance(node, dict):
            if all(isinstance(k, str) for k in node):
                return {k: walk(v, f"{path}.{k}" if path else k) for k, v in node.items()}
            return {"__items__": [[k, walk(v, f"{path}.{k}")] for k, v in node.items()]}
        if isinstance(node, (list, tuple)):
            return [walk(v, f"{path}.{i}") for i, v in enumerate(node)]
        if isinstance(node, (np.integer, np.floating, np.bool_)):
            return node.item()
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        raise UnsavableValue(f"cannot checkpoint value of type {type(node).__name__} at '{path}': a checkpoint holds "
                             f"tensors, arrays, numbers, strings, None, and lists and dicts of them (what a "
                             f"callback's state_dict() or an algorithm's extra_state() returns must be such)")

    return walk(tree, prefix), tensors


def unflatten_state(skeleton: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """Inverse of :func:`flatten_state`."""
    if isinstance(skeleton, dict):
        if "__tensor__" in skeleton:
            return tensors[skeleton["__tensor__"]]
        if "__ndarray__" in skeleton:
            return tensors[skeleton["__ndarray__"]].numpy()
        if "__items__" in skeleton:
            return {k: unflatten_state(v, tensors) for k, v in skeleton["__items__"]}
        return {k: unflatten_state(v, tensors) for k, v in skeleton.items()}
    if isinstance(skeleton, list):
        return [unflatten_state(v, tensors) for v in skeleton]
    return skeleton


def save_checkpoint(path: str | Path, state: dict[str, Any], metadata: dict[str, Any],
                    what: str = "checkpoint") -> Path:
    """Save ``state`` (nested tensors/arrays/JSON values) and ``metadata`` as ``path``.{safetensors,json}
    (``what``: the word errors use for the pair, checkpoint or dataset). The save writes its own ``checkpoint_id``,
    ``sha256`` and ``format_version`` (this canter's layout, that of the state it writes): those of ``metadata`` (a
    loaded checkpoint's, saved again) are left out."""
    base = checkpoint_base(path)
    skeleton, tensors = flatten_state(state)
    ckpt_id = uuid.uuid4().hex
    # the save's own id and hash, not those of a loaded checkpoint's metadata passed again: its old id in the .json
    # did not match the header's new one (a pair saved under a new name was 'do not belong together'); nor the loaded
    # format_version: the state is written in this canter's layout, and an older version would be read as that one
    metadata = {k: v for k, v in metadata.items() if k not in ("checkpoint_id", "sha256", "format_version")}
    meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "checkpoint_id": ckpt_id, **metadata, "state": skeleton}
    text = json.dumps(meta, indent=1, allow_nan=True)
    json_path = base.with_name(base.name + ".json")
    st_path = base.with_name(base.name + ".safetensors")
    for target in (st_path, json_path):  # the .json's was an IsADirectoryError traceback, the .safetensors written
        if target.is_dir():
            raise CanterError(f"cannot save the {what}: {target} is a directory, not a file: move it away or "
                              f"save under another name")
    try:  # the id of the checkpoint this one replaces: a kill between the two renames leaves that .json
        previous = str(json.loads(json_path.read_text()).get("checkpoint_id", ""))
    except (OSError, ValueError, AttributeError):
        previous = ""
    with made_dirs(base.parent):  # a save that fails (a full disk) removes the directories it made
        with atomic_path(st_path) as tmp:  # streamed from the tensors' memory: no copy of a replay buffer in memory
            _save_tensors(tensors, tmp, {"format": FORMAT, "checkpoint_id": ckpt_id, "replaces": previous,
                                         "canter_meta": text, "content_sha256": content_sha256(text, tensors)})
            digest = _sha256(tmp)
        text = json.dumps({**meta, "sha256": digest}, indent=1, allow_nan=True)
        atomic_write(json_path, text.encode())
    return base


#: what a checkpoint's JSON says of its agent (:func:`canter.run_meta.run_metadata`); a resumable ``last`` adds the
#: trainer's keys, which a saved agent does not carry
AGENT_METADATA = ("algorithm", "env", "step", "observation_space", "action_space", "canter_version", "git_commit",
                  "git_dirty", "project_git_commit", "project_git_dirty", "config", "user_modules", "trainer")


def save_agent(agent: Any, path: str | Path) -> Path:
    """Save ``agent`` (one that ``canter.train`` or ``canter.load`` returned: it carries its run's ``metadata``; one
    that ``canter.make_agent`` built: its config at step 0; or
    one that a trainer trains (``canter.make_trainer``'s or one built by hand), in its loop or a callback: the run's
    metadata as of now; or
    as of its trainer's last iteration or ``close()``, once that trainer is gone) as
    the checkpoint pair ``path.safetensors`` + ``path.json``, which ``canter.load`` reads: weights, observation
    statistics and optimizer state, with the run's config, spaces and step. A directory, or a run's resumable
    ``last`` (its trainer state would be lost), is refused."""
    if not isinstance(path, (str, os.PathLike)):
        raise CanterError(f"expected a checkpoint path (a str or pathlib.Path), got {path!r}")
    meta = getattr(agent, "metadata", None)
    trainer = getattr(agent, "trainer_ref", None)
    trainer = trainer() if trainer is not None else None  # a trainer training it: the run's metadata as of now
    if trainer is not None and trainer.agent is agent and trainer.resolved_config is not None:
        from canter.run_meta import run_metadata

        meta = run_metadata(trainer, trainer.resolved_config)
    elif getattr(agent, "run_metadata_snapshot", None) is not None:  # its trainer is gone: its last metadata
        meta = agent.run_metadata_snapshot
    elif getattr(agent, "save_refused", None):  # a hand-built trainer's run that names no env: no wrong label
        raise CanterError(agent.save_refused)
    elif meta is None and getattr(agent, "made_config", None) is not None:  # canter.make_agent's, never trained
        from canter.run_meta import agent_metadata

        meta = agent_metadata(agent, agent.made_config)
    if not isinstance(meta, dict) or not all(k in meta for k in ("config", "observation_space", "action_space")):
        raise CanterError("this agent carries no run metadata (config, spaces) to save with it: save an agent that "
                          "canter.train, canter.load or canter.make_agent returned, or one that a canter.make_trainer "
                          "trainer trains")
    base = checkpoint_base(path)
    if base.is_dir():
        raise CanterError(f"'{path}' is a directory; an agent is saved as a file pair: give a name, such as "
                          f"'{base / 'agent'}'")
    try:
        resumable = json.loads(base.with_name(base.name + ".json").read_text()).get("resumable")
    except (OSError, ValueError, AttributeError):
        resumable = False
    if resumable:
        raise CanterError(f"'{base}' is a run's resumable checkpoint, which saving the agent over would replace; "
                          f"give another name")
    # its missing directories are made by save_checkpoint, which removes them again if the save fails (canter tune's
    # OUT/agents was left empty by a trial whose agent could not be saved)
    return save_checkpoint(base, {"agent": agent.state_dict()}, {k: meta[k] for k in AGENT_METADATA if k in meta})


def _save_tensors(tensors: dict[str, torch.Tensor], path: Path, metadata: dict[str, str]) -> None:
    """``safetensors.torch.save_file``, its I/O failures (a full disk) raised as the ``OSError`` they are."""
    try:
        st_save_file(tensors, path, metadata=metadata)
    except SafetensorError as exc:  # the OS error's number is only in the text: "... (os error 28)"
        code = re.search(r"\(os error (\d+)\)", str(exc))
        if code is None:
            raise
        errno_ = int(code.group(1))
        raise OSError(errno_, os.strerror(errno_), str(path)) from None


def _sha256(path: Path) -> str:
    """The SHA-256 of the file ``path`` (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


def checkpoint_base(path: str | Path) -> Path:
    """The ``.safetensors``/``.json`` pair's common path (accepts either file or the stem)."""
    base = Path(path).expanduser()  # agent.save('~/x') made a folder named '~' (init_from expanded it)
    return base.with_suffix("") if base.suffix in (".safetensors", ".json") else base


def _read_json_file(json_path: Path, what: str) -> dict[str, Any] | None:
    try:
        meta = json.loads(json_path.read_text())
    except FileNotFoundError:
        return None
    except OSError as exc:  # a directory in its place, no permission: it was 'is not valid JSON: [Errno 21] ...'
        raise CanterError(f"{what} metadata {json_path} {_unreadable(exc, what)}") from None
    except (ValueError, RecursionError) as exc:  # ValueError: bad JSON or UTF-8, an int over 4300 digits
        raise CanterError(f"{what} metadata {json_path} is not valid JSON: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:  # e.g. a run's summary.json given instead
        hint = run_dir_hint(json_path) if what == "checkpoint" else "write it again with canter collect"
        raise CanterError(f"{json_path} is not a canter {what}; {hint}")
    return meta


def _unreadable(exc: OSError, what: str = "checkpoint") -> str:
    """The end of the error for a ``what`` file (a checkpoint, a dataset) that is there but cannot be read (``exc``:
    the read's error)."""
    if isinstance(exc, IsADirectoryError):  # a dataset's said 'pass another checkpoint'
        return f"is a directory, not a file: put the file back there or pass another {what}"
    return f"cannot be read: {exc.strerror or exc}"


def _read_header(st_path: Path, what: str) -> dict[str, str]:
    if st_path.is_dir():  # safetensors said 'No such device (os error 19)'
        raise CanterError(f"{what} tensors {st_path} {_unreadable(IsADirectoryError(), what)}")
    try:
        with safe_open(str(st_path), framework="pt") as f:
            return f.metadata() or {}
    except FileNotFoundError:
        raise CanterError(f"{what} tensors not found: {st_path}") from None
    except Exception as exc:  # safetensors raises its own error types for files that are not safetensors
        raise CanterError(f"{what} tensors {st_path} are not a readable safetensors file: {exc}") from None


def _choose_metadata(base: Path, what: str) -> tuple[dict[str, Any], bool]:
    """``(metadata, from_json)``: the .json if it belongs to the tensors file, else the header's copy (``what``:
    the word errors use for the pair, checkpoint or dataset); a ``format_version`` above this canter's is refused."""
    meta, from_json = _pick_metadata(base, what)
    check_version(meta.get("format_version", 1), FORMAT_VERSION, f"{what} {base}", "format_version", f"a {what}",
                  f": pass another {what}")
    return meta, from_json


def _pick_metadata(base: Path, what: str) -> tuple[dict[str, Any], bool]:  # _choose_metadata, version unchecked
    json_path, st_path = base.with_name(base.name + ".json"), base.with_name(base.name + ".safetensors")
    if not json_path.exists() and not st_path.exists():
        raise CanterError(f"{what} not found: {json_path}")
    check_utf8_path(st_path, what)
    meta = _read_json_file(json_path, what)
    header = _read_header(st_path, what)
    if header.get("format") != FORMAT:
        raise CanterError(f"{st_path} is not a canter {what}")
    if meta is not None and meta.get("checkpoint_id") == header.get("checkpoint_id"):
        _check_json_copy(meta, header, json_path, what)
        return meta, True
    behind = meta is None or (header.get("replaces") and header.get("replaces") == meta.get("checkpoint_id"))
    if "canter_meta" in header and behind:  # the .json is missing or one save behind (killed between the renames)
        try:
            meta = json.loads(header["canter_meta"])
        except (ValueError, RecursionError) as exc:
            raise CanterError(f"{what} {st_path} has a corrupt header: {exc}") from None
        return meta, False
    raise CanterError(f"{what} {base} is incomplete: its .json and .safetensors files do not belong together")


def _check_json_copy(meta: dict[str, Any], header: dict[str, str], json_path: Path, what: str) -> None:
    """Refuse a ``.json`` that differs from the copy of it in its tensors file's header (``canter_meta``, which the
    ``.json``'s sha256 covers with the tensors): a ``.json`` edited by hand or damaged, whose config and
    ``user_modules`` loading would have used (and imported). A header without the copy (no canter since the first
    self-contained checkpoints writes one) leaves the ``.json`` unchecked, as before."""
    if "canter_meta" not in header:
        return
    try:
        copy = json.loads(header["canter_meta"])
    except (ValueError, RecursionError) as exc:
        raise CanterError(f"{what} {json_path.with_suffix('.safetensors')} has a corrupt header: {exc}") from None
    own = {k: v for k, v in meta.items() if k != "sha256"}
    if _canonical(own) != _canonical(copy):
        raise CanterError(f"{what} {json_path} differs from the copy of it in its .safetensors file at "
                          f"'{_first_difference(own, copy)}' (edited by hand or damaged): restore it, or delete it "
                          f"to load the copy")


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    """The dotted path of the first place where the JSON values ``a`` and ``b`` differ ('' for the whole)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b or _canonical(a[key]) != _canonical(b[key]):
                where = f"{path}.{key}" if path else str(key)
                return _first_difference(a[key], b[key], where) if key in a and key in b else where
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if _canonical(x) != _canonical(y):
                return _first_difference(x, y, f"{path}.{i}" if path else str(i))
    return path or "(the whole file)"


def _files_now(base: Path) -> tuple[Any, ...]:
    """(inode, size, mtime) of checkpoint ``base``'s two files (None for a missing one): a save replaces both."""
    out: list[Any] = []
    for suffix in (".json", ".safetensors"):
        try:
            st = os.stat(base.with_name(base.name + suffix))
            out.append((st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


#: how often a read of a checkpoint that its run saved again meanwhile is tried (``canter eval`` of a live run)
READ_TRIES = 5


def _read_unchanged(base: Path, read: Any) -> Any:
    """``read(base)``; again when it failed while a save replaced the checkpoint's files (its parts were read from
    two saves: the .json and the tensors, or the tensors' header and bytes). A read the files did not change
    under raises its error."""
    for _ in range(READ_TRIES - 1):
        before = _files_now(base)
        try:
            return read(base)
        except CanterError:
            now = _files_now(base)
            if now == before or now == (None, None):  # unchanged, or deleted: nothing to read again
                raise
    return read(base)


def read_metadata(path: str | Path, what: str = "checkpoint") -> dict[str, Any]:
    """Read and check a checkpoint's JSON metadata (without loading its tensors; ``what``: the word its errors
    call the file pair, "dataset" for an offline dataset stored the same way). Metadata read from the .safetensors
    alone (no .json) is checked with the hash in its header, over its tensors too, as loading checks it."""
    return _read_unchanged(checkpoint_base(path), lambda base: _checked_metadata(base, what))


def _checked_metadata(base: Path, what: str) -> dict[str, Any]:
    """:func:`_choose_metadata`'s metadata, the header's copy checked (:func:`check_lone_metadata`): unchecked, an
    edited copy's ``user_modules`` were imported (a dataset's, by an offline run) before loading refused it."""
    meta, from_json = _choose_metadata(base, what)
    if not from_json:
        check_lone_metadata(base.with_name(base.name + ".safetensors"), meta, what)
    return meta


def load_checkpoint(path: str | Path, what: str = "checkpoint") -> tuple[dict[str, Any], dict[str, Any]]:
    """Load ``(state, metadata)``; tensors come from safetensors only (nothing is unpickled). A checkpoint that
    its run saves again while it is read is read again (``what``: as :func:`read_metadata`)."""
    return _read_unchanged(checkpoint_base(path), lambda base: _load_checkpoint(base, what))


def _load_checkpoint(base: Path, what: str) -> tuple[dict[str, Any], dict[str, Any]]:
    meta, from_json = _choose_metadata(base, what)
    st_path = base.with_name(base.name + ".safetensors")
    try:
        blob = _read_file(st_path)
    except FileNotFoundError:  # deleted since its header was read: a running run's keep_checkpoints pruned it
        raise CanterError(f"{what} {base} was deleted while it was read (a run keeping only its newest step-N "
                          f"checkpoints, keep_checkpoints, removes the older ones){_closest_checkpoints(base)}") from None
    if from_json and "sha256" not in meta:  # every canter save writes it: without it nothing vouches for the tensors
        raise CanterError(f"{what} {base}.json has no sha256 of its tensors (edited by hand?); "
                          f"restore it or load another {what}")
    if from_json and meta["sha256"] != hashlib.sha256(blob).hexdigest():
        raise CanterError(f"{what} {st_path} is corrupt: its sha256 differs from the one in {base.name}.json")
    try:
        tensors = _tensor_views(blob)
        if tensors is None:  # a layout the views do not take: safetensors' own copy
            tensors = st_load(bytes(blob))
    except Exception as exc:  # safetensors raises its own error types for corrupt files
        raise CanterError(f"{what} tensors {st_path} are unreadable: {exc}") from None
    if not from_json:  # the .safetensors alone: its header's hash of its metadata and tensors vouches for them
        header = json.loads(bytes(blob[8:8 + int.from_bytes(blob[:8], "little")])).get("__metadata__") or {}
        check_content(header, tensors, meta, st_path, what)
    try:
        state = unflatten_state(meta["state"], tensors)
    except (KeyError, TypeError, ValueError) as exc:
        raise CanterError(f"{what} {base} is corrupt: its metadata and tensors disagree ({exc!r})") from None
    return state, meta


def _read_file(path: Path) -> bytearray:
    """The bytes of ``path`` in one writable buffer, read into it in place (``read_bytes`` and then safetensors' load
    held every tensor twice: a 5.6 GB dataset needed 11 GB to load)."""
    with open(path, "rb") as f:
        blob = bytearray(os.fstat(f.fileno()).st_size)
        view, done = memoryview(blob), 0
        while done < len(blob):
            n = f.readinto(view[done:done + 2**30])
            if not n:  # the file shrank while it was read: what was read, as read_bytes gave it
                del view
                return blob[:done]
            done += n
    return blob


#: safetensors' dtype names, as torch's dtypes
_ST_DTYPES = {"BOOL": torch.bool, "U8": torch.uint8, "I8": torch.int8, "I16": torch.int16, "I32": torch.int32,
              "I64": torch.int64, "F16": torch.float16, "BF16": torch.bfloat16, "F32": torch.float32,
              "F64": torch.float64}


def _tensor_views(blob: bytearray) -> dict[str, torch.Tensor] | None:
    """The tensors of a safetensors file's bytes as views of ``blob`` (no copy: the tensors keep it alive), or None
    where the file holds something else than whole, aligned tensors of the dtypes above (safetensors then loads it,
    and raises for a corrupt file)."""
    if len(blob) < 8:
        return None
    size = int.from_bytes(blob[:8], "little")
    if size > len(blob) - 8:
        return None
    header = json.loads(bytes(blob[8:8 + size]))
    start, tensors = 8 + size, {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype, shape, (begin, end) = _ST_DTYPES.get(entry["dtype"]), entry["shape"], entry["data_offsets"]
        if dtype is None:
            return None
        itemsize = torch.empty((), dtype=dtype).element_size()
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= begin <= end <= len(blob) - start or end - begin != count * itemsize or (start + begin) % itemsize:
            return None
        tensors[name] = (torch.frombuffer(blob, dtype=dtype, count=count, offset=start + begin) if count
                         else torch.empty(0, dtype=dtype)).reshape(shape)
    return tensors


def checkpoint_space(meta: dict[str, Any], which: str, where: Any) -> Any:
    """Rebuild a space described in checkpoint metadata; a bad description is a clear error."""
    from canter.envs import space_from_dict, space_to_dict

    desc = meta.get(which)
    try:
        space = space_from_dict(desc)
        space_to_dict(space)  # a space that cannot be described again is not one canter wrote
        return space
    except Exception as exc:  # malformed descriptions raise whatever gymnasium/numpy raise
        raise CanterError(f"checkpoint {where} has an invalid {which}: {desc!r:.200} ({exc})") from None


def checkpoint_present(base: Path) -> bool:
    """Whether checkpoint ``base`` has a file (a ``.safetensors`` alone is complete: it carries its JSON in its
    header)."""
    return base.with_name(base.name + ".json").exists() or base.with_name(base.name + ".safetensors").exists()


# finding a checkpoint from a typed path: canter/checkpoint_find.py (re-exported here)
from canter.checkpoint_find import (  # noqa: E402,F401
    DATASET_NOT_RUN, _closest_checkpoints, find_checkpoint, is_dataset, no_run_dir, run_dir_hint,
)
