"""Layer 7, the top of the house: the ``isrlab`` command line, one module per door.

``main`` dispatches; ``args`` is the flags' shared handling (a usage error is one line and
exit 2, bounded counts, SIGTERM taken as Ctrl-C); each door parses its flags, calls the
libraries below, prints, and turns what happened into its exit code. Everything below is a
library a door (or a notebook, through ``spark_analysis.api``) calls; nothing below imports
this package.
"""
