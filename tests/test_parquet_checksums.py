"""The run's parquet files carry page checksums: a changed byte in their data is an error naming the file
(resume, report, plot), not a wrong number carried forward; files written without checksums still read."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from canter.errors import CanterError
from canter.logging.history import HISTORY_COLUMNS, check_history, write_parquet
from canter.tools.rundata import read_table

RETURNS = np.random.default_rng(0).normal(size=50).round(3).tolist()  # snappy keeps random floats as literals


def _rows() -> list[dict]:
    return [{"step": 10 * i, "wall_time": 0.1 * i, "episode_return": r, "episode_length": 10, "rolling_return": r}
            for i, r in enumerate(RETURNS)]


def _flip_silently(path: Path) -> None:
    """Flip one byte of ``episode_return``'s data such that reading without checksums gives another number
    and no error (what a bad disk sector or a copy gone wrong leaves)."""
    original = path.read_bytes()
    chunk = pq.ParquetFile(path).metadata.row_group(0).column(HISTORY_COLUMNS.index("episode_return"))
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    for pos in range(start + chunk.total_compressed_size - 1, start, -1):
        damaged = bytearray(original)
        damaged[pos] ^= 0x01
        path.write_bytes(bytes(damaged))
        try:
            if pq.read_table(path)["episode_return"].to_pylist() != RETURNS:
                return
        except (OSError, pa.ArrowException):
            continue
    raise AssertionError("no silent flip found")


def test_a_flipped_byte_in_a_history_file_is_an_error_naming_it(tmp_path):
    path = tmp_path / "history.parquet"
    write_parquet(path, _rows(), HISTORY_COLUMNS)
    _flip_silently(path)
    with pytest.raises(CanterError, match=f"cannot read '{path}'.*checksum"):  # canter report / plot
        read_table(path)
    with pytest.raises(CanterError, match=f"cannot resume: {path} .*checksum"):  # canter train --resume
        check_history(tmp_path, {"history": len(RETURNS)})


def test_a_history_file_written_without_checksums_still_reads(tmp_path):
    path = tmp_path / "history.parquet"
    pq.write_table(pa.table({c: [row[c] for row in _rows()] for c in HISTORY_COLUMNS}), path)  # canter before
    assert read_table(path)["episode_return"].tolist() == RETURNS
    check_history(tmp_path, {"history": len(RETURNS)})
