"""``python -m deltalog.cli``: the ``deltalog`` command."""

import sys

from deltalog.cli.commands import main

if __name__ == "__main__":  # importing the module (pkgutil.walk_packages) runs nothing
    sys.exit(main())
