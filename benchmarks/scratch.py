"""When benchmark scratch copies are deleted: after the last measurement of the whole run.

On ext4 without a journal (these machines), creating a file walks past every inode of its block
group that was freed in the last minute, or in the last six while the inode table block is
dirty (``recently_deleted`` in ``fs/ext4/ialloc.c``). Deleting one benchmark's table copies
(``bench_commit``'s single-writer copies alone are ~60,000 small files) made each file created in
the next minutes cost 1-2 ms instead of 0.05 ms, more than a whole deltalog commit: the next
benchmark's commits were measured against the previous one's clean-up.

So under ``scripts/bench.sh``, which sets ``DELTALOG_BENCH_TRASH``, a finished scratch directory is
renamed into that trash directory (a rename frees no inode) and ``bench.sh`` empties it when
every benchmark is done. A script run on its own deletes its scratch at the end, as before.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

TRASH_ENV = "DELTALOG_BENCH_TRASH"


def discard(path: Path) -> None:
    """Delete ``path`` (a directory), or move it into the run's trash under ``bench.sh``."""
    if not path.exists():
        return
    trash = os.environ.get(TRASH_ENV)
    if trash:
        target = Path(trash) / f"{path.name}-{uuid.uuid4().hex[:8]}"
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            path.rename(target)
            return
        except OSError:  # the trash is on another filesystem: delete now
            pass
    shutil.rmtree(path, ignore_errors=True)
