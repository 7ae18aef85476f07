"""Per-line and whole-file integrity of a trace.

Two layers, so that damage is found *and located*:

* every line ends with ``"crc":<n>}`` where ``n`` is the CRC-32 of the line's JSON text
  rendered without the crc member. An altered value is caught on its own line.
* ``run_end`` carries ``sha256``: the hex SHA-256 of every byte before the ``run_end`` line.
  A removed, swapped or appended line that keeps its own crc is caught by ``seq`` (the
  line index) or by the digest.

CRC-32 is not a defence against an adversary; it is a tripwire for edits, truncation and
bit rot, which is what a shared bug-report trace meets.
"""

from __future__ import annotations

import zlib

CRC_MARK = b',"crc":'


def seal(body: bytes) -> bytes:
    """Append the crc member to a rendered JSON object ``{...}`` and a newline."""
    crc = zlib.crc32(body)
    return b"%s%s%d}\n" % (body[:-1], CRC_MARK, crc)


def unseal(line: bytes) -> bytes | None:
    """Return the line's JSON text without its crc member, or None when the crc is wrong.

    ``line`` is one line without its trailing newline.
    """
    cut = line.rfind(CRC_MARK)
    if cut < 0 or not line.endswith(b"}"):
        return None
    try:
        crc = int(line[cut + len(CRC_MARK) : -1])
    except ValueError:
        return None
    body = line[:cut] + b"}"
    if zlib.crc32(body) != crc:
        return None
    return body
