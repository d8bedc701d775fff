"""Compatibility across engines: which engine disagrees on what about a table.

``deltalog compat`` (docs/compat.md) asks deltalog, delta-rs, delta-spark and Delta Kernel
(Java) about a table.

``canon`` defines the canonical forms (values, checksums, partition values); ``observe`` and
``probe_main`` are the Python engines' probe process; ``engines`` runs each engine in its own
process; ``model`` and ``diff`` hold and compute the differences; ``limits`` lists the known
engine limitations; ``report``, ``render`` and ``junit`` present them; ``api`` is
:func:`compare`; ``pytest_plugin`` is the ``delta_compat`` fixture.
"""

from deltalog.compat.api import compare
from deltalog.compat.report import CompatReport

__all__ = ["CompatReport", "compare"]
