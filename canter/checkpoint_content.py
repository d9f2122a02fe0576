"""The hash a checkpoint's ``.safetensors`` header holds over its metadata copy and its tensors (``content_sha256``),
and its check where that file is read without its ``.json`` (deleted, or one save behind): by ``load_checkpoint``
over the tensors it loaded, and by ``read_metadata`` over the tensors read one at a time (its metadata, a
dataset's ``user_modules`` that an offline run imports, came unchecked before the tensors were loaded)."""
from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import torch

from canter.errors import CanterError, CanterWarning, warn


def canonical(value: Any) -> str:
    """``value`` as JSON text with sorted keys (NaN equal to NaN, key order and indentation not compared)."""
    return json.dumps(value, sort_keys=True, allow_nan=True)


def content_sha256(text: str, tensors: Mapping[str, torch.Tensor]) -> str:
    """The SHA-256 of a checkpoint's metadata ``text`` and its ``tensors`` (each one's name, dtype, shape and bytes,
    by name), which its .safetensors header holds: a .safetensors read alone (no .json, or one a save behind) is
    checked with it."""
    digest = hashlib.sha256(text.encode())
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        digest.update(json.dumps([name, str(t.dtype), list(t.shape)]).encode())
        if t.numel():  # its bytes, whatever its dtype (numpy has no float8: .numpy() raised, the save lost)
            digest.update(memoryview(t.reshape(-1).view(torch.uint8).numpy()))
    return digest.hexdigest()


class FileTensors(Mapping):
    """The tensors of an open ``safetensors.safe_open`` file ``f`` by name, each read when asked for (hashed one at
    a time: a replay buffer's are never all in memory at once)."""

    def __init__(self, f: Any) -> None:
        self.f, self.names = f, list(f.keys())

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.f.get_tensor(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


def check_content(header: dict[str, str], tensors: Mapping[str, torch.Tensor], meta: dict[str, Any], st_path: Path,
                  what: str, warn_unchecked: bool = True) -> None:
    """Refuse a .safetensors read without its .json whose ``header`` (as read with its ``tensors``) is not the one
    ``meta`` was read from before (a save replaced it since: the caller reads it again), or whose metadata and
    tensors differ from the header's ``content_sha256``. One an older canter wrote, without it, is read unchecked,
    with a :class:`CanterWarning` where ``warn_unchecked``."""
    try:  # the metadata read from its header before: another now if a save replaced it since (then read again)
        same = canonical(json.loads(header.get("canter_meta", "null"))) == canonical(meta)
    except (ValueError, RecursionError):
        same = False
    if not same:
        raise CanterError(f"{what} {st_path} changed while it was read")
    if "content_sha256" not in header:
        if warn_unchecked:
            warn(CanterWarning(f"{what} {st_path} is read without its .json, and an older canter wrote it with no "
                               f"hash of its own: its tensors are unchecked"))
    elif content_sha256(header.get("canter_meta", ""), tensors) != header["content_sha256"]:
        raise CanterError(f"{what} {st_path} is corrupt: its tensors or metadata differ from the hash in its header "
                          f"(it was read without its .json)")


def check_lone_metadata(st_path: Path, meta: dict[str, Any], what: str) -> None:
    """:func:`check_content` of the .safetensors ``st_path``, read without its .json (``meta``: the metadata read
    from its header), its tensors read one at a time from the file; without a hash, silent (loading it warns)."""
    from safetensors import safe_open

    try:
        with safe_open(str(st_path), framework="pt") as f:
            check_content(f.metadata() or {}, FileTensors(f), meta, st_path, what, warn_unchecked=False)
    except CanterError:
        raise
    except Exception as exc:  # deleted meanwhile, or tensor data that safetensors cannot read
        raise CanterError(f"{what} tensors {st_path} are unreadable: {exc}") from None
