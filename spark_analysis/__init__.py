"""Layer 6 of the house: the PySpark analyses of ``isrlab analyze`` (and the Spark side of
``import`` and ``campaign --spark``), over traces read as ``traces`` defines them. Nothing
below imports it; its door is ``cli.analyze``.
"""
