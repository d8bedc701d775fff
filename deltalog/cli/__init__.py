"""The ``deltalog`` command line (the top floor: it may use everything below it).

``commands`` holds the parser, the entry point and the small commands; ``files`` and
``history`` lay out their tables; ``text`` formats times, sizes and aligned tables. Run it as
``deltalog``, ``python -m deltalog`` or ``python -m deltalog.cli``.
"""

from deltalog.cli.commands import EXIT_CODES, build_parser, main

__all__ = ["EXIT_CODES", "build_parser", "main"]
