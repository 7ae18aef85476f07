"""One view of an analysis written as a Parquet dataset (``isrlab analyze --out``).

An analysis's views are small: counts per trace, per partition, per minute, per knob value,
a row per regression or divergence — never the events. Spark's own writer pays, for each
of them, a job whose task runs Parquet's writer and an output committer (a temporary
attempt folder, a task commit, a job commit, a rename), and the session's first write
loads Parquet's writer classes and compiles them. Measured on ``make demo``'s trace
(2026-11-29, a slow hour: the bare ``spark.read.json`` floor took 30 s), the twelve views
took 19 s of write time, 0.7–3.2 s each, two at a time, for a handful of rows each.

So a view whose folder is on this machine is collected to the driver as Arrow batches
(``DataFrame.toArrow``: the same job that computes it, without the writer) and written
here with pyarrow as one file, ``part-00000.snappy.parquet``, beside a ``_SUCCESS``
marker: the layout Spark writes, read back by ``spark.read.parquet`` (or pandas, DuckDB)
with the same columns and types (``tests/spark/test_cli.py`` holds each view equal to
Spark's own write of it). It is also where a user wants the files when ``--master`` is a
cluster: Spark's writer would put a local path's files on the executors' own disks. A
view for a URI (``hdfs://``, ``s3a://``, ``file://``) is written by Spark, on the cluster.

The dataset is written whole or not at all: into a scratch folder beside it
(``emulator.files.scratch_folder``: a prefix a claimed folder tolerates, swept by the next
analysis when a killed one left it), renamed into place; a dataset of the same name — a
previous analysis in the same claimed ``--out`` — is replaced only then.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from emulator.files import current_umask, scratch_folder

#: the one data file of a dataset written here (Spark's name pattern: part, index, codec)
PART_FILE: Final = "part-00000.snappy.parquet"
#: Spark's marker of a completely written dataset (its committer's, kept for readers that
#: look for it)
SUCCESS: Final = "_SUCCESS"
#: the process's umask, read once at import: reading it sets it for a moment, which the
#: threads that write views side by side must not see
_UMASK: Final = current_umask()


def write_dataset(df: DataFrame, path: str) -> pa.Table | None:
    """``df`` as the Parquet dataset ``path`` (a folder), replacing one already there; its
    rows as an Arrow table when they were collected here (a local ``path``), else None."""
    if "://" in path:
        df.write.mode("overwrite").parquet(path)
        return None
    table = df.toArrow()
    _place(table, Path(path))
    return table


def write_rows(rows: Sequence[dict[str, Any]], schema: StructType, path: str) -> None:
    """Rows the driver holds (``Analysis.local_views``: no Spark job), each a dict by
    column name, as the dataset ``path`` of Spark schema ``schema`` (a local ``path``)."""
    if "://" in path:
        raise ValueError(f"not a local folder: {path}")
    _place(pa.Table.from_pylist(list(rows), schema=to_arrow_schema(schema)), Path(path))


def _place(table: pa.Table, final: Path) -> None:
    """``table`` written as the dataset ``final``, whole or not at all."""
    scratch = scratch_folder(final.parent)
    old: Path | None = None
    try:
        pq.write_table(table, scratch / PART_FILE, compression="snappy")
        (scratch / SUCCESS).touch()
        # as mkdir would have made it, not mkdtemp's 0700
        os.chmod(scratch, 0o777 & ~_UMASK)
        if final.exists() or final.is_symlink():
            old = scratch_folder(final.parent)
            os.replace(final, old / final.name)
        os.replace(scratch, final)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        if old is not None and not final.exists():   # put the previous dataset back
            with contextlib.suppress(OSError):
                os.replace(old / final.name, final)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
