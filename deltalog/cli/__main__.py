"""``python -m deltalog.cli``: the ``deltalog`` command."""

import sys

from deltalog.cli.commands import main

sys.exit(main())
