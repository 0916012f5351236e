"""``python -m orbitree.cli``: the ``orbitree`` command (``orbitree.cli.main``)."""

import sys

from orbitree.cli import main

if __name__ == "__main__":
    sys.exit(main())
