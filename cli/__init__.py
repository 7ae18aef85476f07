"""The ``isrlab`` command line (see ``cli.main``)."""
