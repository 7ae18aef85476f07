"""Traces: their format (layer 1) and everything that reads them (layer 4).

Layer 1, written by the runtime: ``schema``, ``integrity`` (each line's seal), ``writer``,
``blocks``. Layer 4: ``reader`` (the one trace contract), ``checker``, ``explain`` (with
``explain_fold``, ``explain_rules``, ``explain_output``, ``explain_chains``),
``show``, ``replay``, ``logs`` (Kafka's broker logs as a trace). ``regress`` (the
regression suite) runs many executions: layer 5. Doors live in ``cli``.
"""
