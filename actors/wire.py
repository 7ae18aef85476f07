"""One codec for every message: typed dataclasses <-> msgpack frames with a CRC.

A frame is ``msgpack([tag, field1, field2, ...]) + crc32(payload)`` (4 bytes, big endian).
Fields are packed from a per-class precomputed getter (never ``dataclasses.asdict``, which
deep-copies and costs ~20 us a message; docs/stack-notes.md, section 2) and rebuilt with
``cls(*fields)``. Frames are decoded with ``use_list=False``, so sequences come back as
tuples: message fields that hold sequences are typed as tuples.

The CRC plays the part of Kafka's record-batch CRC and TCP's checksum: a corrupted frame
is *rejected* by the receiver (traced as ``frame_rejected``), never silently decoded into a
different message.
"""

from __future__ import annotations

import dataclasses
import operator
import struct
import zlib
from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform

import msgpack

from actors.core import value

T = TypeVar("T")

_CLASSES: dict[int, tuple[type[Any], tuple[str, ...]]] = {}
#: per class: its tag and a getter returning the field values as a tuple
_PACK: dict[type[Any], tuple[int, Callable[[Any], tuple[Any, ...]]]] = {}
#: per tag: the class and the frame's array length (the tag and the fields)
_DECODE: dict[int, tuple[type[Any], int]] = {}
_CRC = struct.Struct(">I")


class FrameError(Exception):
    """A frame that cannot be accepted (checksum, msgpack, unknown tag, arity)."""


@dataclass_transform(frozen_default=True)
def message(tag: int) -> Callable[[type[T]], type[T]]:
    """Class decorator: make ``cls`` a value class (:func:`actors.core.value`: a slotted
    dataclass, frozen for type checkers) and register it as a wire message under ``tag``."""

    def register(cls: type[T]) -> type[T]:
        cls = value(cls)
        if tag in _CLASSES:
            raise ValueError(f"message tag {tag} used twice ({cls.__name__})")
        names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
        _CLASSES[tag] = (cls, names)
        _DECODE[tag] = (cls, len(names) + 1)
        _PACK[cls] = (tag, _field_getter(names))
        return cls

    return register


class Codec:
    """One per sender: keeps a reusable ``msgpack.Packer`` (its buffer is 256 KiB)."""

    __slots__ = ("_packer",)

    def __init__(self) -> None:
        self._packer = msgpack.Packer()

    def encode(self, msg: Any) -> bytes:
        tag, fields = _PACK[type(msg)]
        payload: bytes = self._packer.pack((tag, *fields(msg)))
        return payload + _CRC.pack(zlib.crc32(payload))


def _field_getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The values of ``names`` as a tuple, in one C call (``attrgetter`` of one name
    returns the bare value, so that case is wrapped)."""
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda msg: (one(msg),)
    if not names:
        return lambda msg: ()
    return operator.attrgetter(*names)


def decode(frame: bytes, _crc32: Callable[[Any], int] = zlib.crc32,
           _unpackb: Callable[..., Any] = msgpack.unpackb) -> Any:
    n = len(frame)
    if n < 5:
        raise FrameError("frame shorter than its checksum")
    payload = memoryview(frame)[:-4]   # no copy
    if _crc32(payload) != int.from_bytes(frame[n - 4:], "big"):
        raise FrameError("checksum mismatch")
    try:
        arr = _unpackb(payload, use_list=False)
    except Exception as exc:  # msgpack raises several types; all mean "bad frame"
        raise FrameError(f"msgpack: {exc}") from None
    if type(arr) is not tuple or not arr:
        raise FrameError("frame is not a tagged array")
    entry = _DECODE.get(arr[0])
    if entry is None:
        raise FrameError(f"unknown message tag {arr[0]!r}")
    cls, arity = entry
    if len(arr) != arity:
        raise FrameError(f"{cls.__name__}: expected {arity - 1} fields, got {len(arr) - 1}")
    return cls(*arr[1:])


def round_trip(msg: Any) -> Any:
    """Encode and decode (tests and tools)."""
    return decode(Codec().encode(msg))


def fields(msg: Any) -> tuple[Any, ...]:
    """A message's field values as a tuple (a part of a multi-partition request or
    response: rebuilt with ``cls(*fields)``)."""
    return _PACK[type(msg)][1](msg)
