"""A file's bytes a block at a time, inflated when it is gzip: the loop the log importer
(``traces.logs.lines``) and Spark's trace scan (``spark_analysis.scan``) share.

Gzip is recognised by its magic bytes, not the name; every member of a concatenated stream
is read (rotated logs often are). Inflation is bounded per step (``most`` bytes out of one
``decompress`` call), so a gzip bomb — one small block that inflates to gigabytes — never
inflates whole in memory. A stream that is damaged or cut off is not raised: the bytes end
where it breaks and ``broke`` is told how (``damaged (…)`` or ``cut off (truncated file)``);
the caller says it in its own words, with what it read before the break.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Final

GZIP_MAGIC: Final = b"\x1f\x8b"
#: what ``broke`` is told when a gzip stream ends before its end of stream
CUT: Final = "cut off (truncated file)"


def inflated_blocks(read: Callable[[], bytes], most: int, broke: Callable[[str], None],
                    inflate: ModuleType = zlib) -> Iterator[bytes]:
    """The bytes ``read()`` returns (an empty ``bytes`` at the end), inflated when they are
    gzip, at most ``most`` bytes a block. ``inflate`` is a module with zlib's
    ``decompressobj`` and ``error`` (zlib-ng's, where the caller has it)."""
    data = read()
    if data[:2] != GZIP_MAGIC:
        while data:
            yield data
            data = read()
        return
    d = inflate.decompressobj(wbits=31)
    while data:
        try:
            out = d.decompress(data, most)
        except inflate.error as exc:
            broke(f"damaged ({exc})")
            return
        if out:
            yield out
        data = d.unconsumed_tail
        if d.eof:
            data = d.unused_data or read()
            if data:    # the next gzip member
                d = inflate.decompressobj(wbits=31)
        elif not data:
            data = read()
    if not d.eof:
        broke(CUT)
