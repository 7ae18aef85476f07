"""``python -m cli``: the ``isrlab`` command."""

import sys

from cli.main import main

sys.exit(main())
