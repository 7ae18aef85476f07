"""Layer 7, the top of the house: the ``isrlab`` command line, one module per door.

``main`` dispatches; each door parses its flags, calls the libraries below, prints, and
turns what happened into its exit code. Everything below is a library a door (or a
notebook, through ``spark_analysis.api``) calls; nothing below imports this package.
"""
