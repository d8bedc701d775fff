"""``python -m deltalog``: the ``deltalog`` command."""

import sys

from deltalog.cli.commands import main

sys.exit(main())
