"""Writing a checkpoint's metadata as a canter save writes it, for tests of what the deeper checks meet (not a test
module itself)."""
from __future__ import annotations

from pathlib import Path
from typing import Any


def write_checkpoint_json(path: str | Path, meta: dict[str, Any]) -> None:
    """Make checkpoint ``path``'s (its .json's) metadata ``meta`` as a canter save writes it: the copy in its
    .safetensors header too, and the sha256 of the rewritten file where ``meta`` has one, so the checkpoint reads
    as one saved so (an older canter's, or one whose values only the deeper checks meet), not as a .json edited by
    hand, which loading refuses first."""
    import json

    from safetensors import safe_open
    from safetensors.torch import save_file

    from canter.checkpoint import _sha256, checkpoint_base

    base = checkpoint_base(path)
    json_path, st_path = base.with_name(base.name + ".json"), base.with_name(base.name + ".safetensors")
    with safe_open(str(st_path), framework="pt") as f:
        header = f.metadata() or {}
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    own = {k: v for k, v in meta.items() if k != "sha256"}
    text = json.dumps(own, indent=1)
    if "content_sha256" in header:  # the hash over the copy and the tensors, as a save computes it
        from canter.checkpoint_content import content_sha256

        header["content_sha256"] = content_sha256(text, tensors)
    save_file(tensors, str(st_path), metadata={**header, "canter_meta": text})
    json_path.write_text(json.dumps({**own, "sha256": _sha256(st_path)} if "sha256" in meta else own))
