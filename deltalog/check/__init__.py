"""``deltalog check``: validate a table's log, its checkpoints and its data files.

The whole ``_delta_log`` is listed and walked version by version:

1. Versions are contiguous from the oldest retained checkpoint (or from 0 without one), and
   below it no commit is missing between two others (:mod:`deltalog.check.lost_commits`).
2. Every commit holds at least one action and parses, and its actions form a valid set: at
   most one ``metaData`` and one ``protocol``, one ``txn`` per app id, one file action of a
   kind per path, no file both added and removed, no path that leaves the table or names
   another bucket or account (:mod:`deltalog.check.actions`).
3. Replaying the commits keeps the table state; a remove of a file that is not live is
   reported, partition values and ``stats`` (:mod:`deltalog.check.stats`) are checked against
   the schema in force, and the protocol's features must be known.
4. Every checkpoint is read and compared with that replayed state: protocol, metadata, app
   ids, domains, live files with their sizes and partition values (:mod:`deltalog.check.state`).
   ``_last_checkpoint`` must parse and agree with the checkpoint it names
   (:mod:`deltalog.check.checkpoints`). A commit below the oldest checkpoint (not replayed)
   must be held by the next checkpoint, else it is a lost commit (:mod:`deltalog.check.orphans`).
5. Every live data file exists with the logged size; files under the table root that nothing
   references, and temp files in the log, are reported as orphans (:mod:`deltalog.check.files`).

Problems are collected as findings (:mod:`deltalog.check.findings`) rather than raised, so one
run reports everything it can, and a log ``DeltaTable`` refuses to open can still be checked.
"""

from __future__ import annotations

from deltalog.check.findings import CODES, CheckReport, Finding
from deltalog.check.walk import check_storage, check_table

__all__ = ["CODES", "CheckReport", "Finding", "check_storage", "check_table"]
