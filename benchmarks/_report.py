"""What the benchmark reports share: facts about the host and the formatting of their cells."""
from __future__ import annotations

import json
import platform
import statistics
import subprocess
import sys
from pathlib import Path


def cpu_model() -> str:
    """The CPU's name with its family and model numbers: the cloud hosts this runs on share one name
    ("AMD EPYC") across generations whose small float32 products differ by ~1.6x."""
    from canter.utils import cpu_info

    name = cpu_info("model name") or platform.processor() or "unknown"
    family, model = cpu_info("cpu family"), cpu_info("model")
    if family and model:
        avx512 = "avx512f" in (cpu_info("flags") or "").split()
        name += f" (family {family}, model {model}{', AVX-512' if avx512 else ''})"
    return name


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages (``n/a`` where /proc is missing)."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def versions() -> dict:
    """Versions of the libraries compared, read in a fresh interpreter, and Python's."""
    code = ("import json, torch, gymnasium, stable_baselines3, canter, numpy;"
            "print(json.dumps({'torch': torch.__version__, 'stable-baselines3': stable_baselines3.__version__,"
            "'gymnasium': gymnasium.__version__, 'canter': canter.__version__, 'numpy': numpy.__version__}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    v = json.loads(out.strip().splitlines()[-1])
    v["python"] = platform.python_version()
    return v


def fmt(values: list[float | None], digits: int = 1) -> str:
    """The median of ``values`` with its (min–max) range and the count of missing (unsolved) ones."""
    vals = [v for v in values if v is not None]
    if not vals:
        return "n/a"
    med = statistics.median(vals)
    text = f"{med:,.{digits}f}"
    if len(vals) > 1:
        text += f" ({min(vals):,.{digits}f}–{max(vals):,.{digits}f})"
    if len(vals) < len(values):
        text += f" [{len(values) - len(vals)} unsolved]"
    return text


def ratio(a: list[float | None], b: list[float | None]) -> str:
    """The median of the per-pair ratios ``a / b`` (pairs with a missing value left out) and their range."""
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y]
    if not pairs:
        return "n/a"
    r = [x / y for x, y in pairs]
    text = f"{statistics.median(r):.2f}"
    if len(r) > 1:
        text += f" ({min(r):.2f}–{max(r):.2f})"
    return text
