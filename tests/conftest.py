"""Shared fixtures: small scenarios run for real (no fakes of the emulator)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Spark's local Python workers must be this interpreter (it has msgpack, trio, isrlab).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
