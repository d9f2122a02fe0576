"""Checkpoints: tensors in safetensors, everything else in JSON. Loading never unpickles.

A checkpoint is a pair ``NAME.safetensors`` + ``NAME.json``. Any nested state (dicts, lists,
tensors, numpy arrays, numbers, strings) is split: tensors and arrays go to the safetensors
file under their path, and the JSON keeps the structure with ``{"__tensor__": key}`` markers.
Both files are written atomically (temp file, fsync, rename) and share a random
``checkpoint_id``, so a pair left half-replaced by a kill is detected and refused.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from canter.errors import CanterError

FORMAT = "canter-checkpoint"
FORMAT_VERSION = 1


def flatten_state(tree: Any, prefix: str = "") -> tuple[Any, dict[str, torch.Tensor]]:
    """Split ``tree`` into a JSON-safe skeleton and a dict of tensors."""
    tensors: dict[str, torch.Tensor] = {}

    def walk(node: Any, path: str) -> Any:
        if isinstance(node, torch.Tensor):
            tensors[path] = node.detach().cpu().contiguous()
            return {"__tensor__": path}
        if isinstance(node, np.ndarray):
            tensors[path] = torch.from_numpy(np.ascontiguousarray(node)).clone()
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
        raise TypeError(f"cannot checkpoint value of type {type(node).__name__} at '{path}'")

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


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a kill leaves either the old file or the new one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_checkpoint(path: str | Path, state: dict[str, Any], metadata: dict[str, Any]) -> Path:
    """Save ``state`` (nested tensors/arrays/JSON values) and ``metadata`` as ``path``.{safetensors,json}."""
    base = Path(path)
    base = base.with_suffix("") if base.suffix in (".safetensors", ".json") else base
    skeleton, tensors = flatten_state(state)
    ckpt_id = uuid.uuid4().hex
    blob = st_save(tensors, metadata={"format": FORMAT, "checkpoint_id": ckpt_id})
    meta = {"format": FORMAT, "format_version": FORMAT_VERSION, "checkpoint_id": ckpt_id,
            "sha256": hashlib.sha256(blob).hexdigest(), **metadata, "state": skeleton}
    text = json.dumps(meta, indent=1, allow_nan=True)
    atomic_write(base.with_name(base.name + ".safetensors"), blob)
    atomic_write(base.with_name(base.name + ".json"), text.encode())
    return base


def checkpoint_base(path: str | Path) -> Path:
    """The ``.safetensors``/``.json`` pair's common path (accepts either file or the stem)."""
    base = Path(path)
    return base.with_suffix("") if base.suffix in (".safetensors", ".json") else base


def read_metadata(path: str | Path) -> dict[str, Any]:
    """Read and check a checkpoint's JSON metadata."""
    base = checkpoint_base(path)
    json_path = base.with_name(base.name + ".json")
    try:
        meta = json.loads(json_path.read_text())
    except FileNotFoundError:
        raise CanterError(f"checkpoint not found: {json_path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CanterError(f"checkpoint metadata {json_path} is not valid JSON: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CanterError(f"{json_path} is not a canter checkpoint")
    return meta


def load_checkpoint(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Load ``(state, metadata)``; tensors come from safetensors only (nothing is unpickled)."""
    base = checkpoint_base(path)
    meta = read_metadata(base)
    st_path = base.with_name(base.name + ".safetensors")
    if not st_path.exists():
        raise CanterError(f"checkpoint tensors not found: {st_path}")
    blob = st_path.read_bytes()
    if meta.get("sha256") not in (None, hashlib.sha256(blob).hexdigest()):
        raise CanterError(
            f"checkpoint {st_path} is incomplete or corrupt: its .json and .safetensors files do not belong together"
        )
    try:
        with safe_open(str(st_path), framework="pt") as f:
            file_meta = f.metadata() or {}
        tensors = st_load(blob)
    except Exception as exc:  # safetensors raises its own error types for corrupt files
        raise CanterError(f"checkpoint tensors {st_path} are unreadable: {exc}") from None
    if file_meta.get("checkpoint_id") != meta.get("checkpoint_id"):
        raise CanterError(f"checkpoint {base} is incomplete: its .json and .safetensors files do not belong together")
    return unflatten_state(meta["state"], tensors), meta
