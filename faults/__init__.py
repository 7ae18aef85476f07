"""Faults: what a fault is (layer 2) and the drivers that run many executions (layer 5).

Layer 2: ``plan`` (each fault's effect, on the ``World`` protocol the cluster implements)
and ``nemesis`` (the generators, from the seed). Layer 5: ``campaign``, ``shrink`` and
``shrink_cli``, ``explore`` and ``explore_cli``, ``compare`` — they run the cluster and
judge each run with ``traces``' checker; their doors live in ``cli``.
"""
