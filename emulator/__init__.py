"""Layers 1–3 of the house: the runtime that runs the ``actors``.

Layer 1, the kernel: ``scheduler`` (Trio tasks, virtual time, the canonical commit order),
``network``, ``rng``, ``choice`` (explore's choice points), ``digest``, ``msgtrace``, and the
plain helpers the layers above share (``files``, ``progress``). It knows no scenario
and no fault: a run it steers is handed in as a protocol (``choice.Steered``).
Layer 2, ``scenario``: scenario files, validated, with Kafka's defaults per era.
Layer 3, ``cluster``: a scenario's actors assembled on the kernel, its faults applied.
Nothing here imports a higher layer (``tests/test_layers.py``).
"""
