"""Commits readers need but cannot have: holes below the oldest checkpoint, empty commit files.

The walk reports holes after the oldest retained checkpoint (:mod:`deltalog.check.walk`).
Below it, a missing commit with commits before it is no trace of log cleanup (which deletes
from the oldest version up) but a lost one: rebuilding any version from it up to the
checkpoint fails with ``VersionGapError``, as delta-spark fails on it. A commit file that holds
no action is a write that was lost: readers that take it for an empty commit drop whatever it
added or removed, and deltalog refuses it with ``EmptyCommitError``.
"""

from __future__ import annotations

import itertools
import mmap

from deltalog.check.findings import Findings
from deltalog.errors import EmptyCommitError
from deltalog.log.storage import TableStorage
from deltalog.protocol.actions import require_actions
from deltalog.protocol.paths import commit_name


def gaps_below_checkpoint(
    findings: Findings, storage: TableStorage, commits: set[int], oldest_checkpoint: int | None
) -> None:
    """Report each run of missing commits between two commits below ``oldest_checkpoint``.

    Args:
        findings: Where the ``version-gap`` findings go.
        storage: The table's storage (for the missing commits' paths).
        commits: The versions of the commit files listed.
        oldest_checkpoint: The oldest checkpoint readers start from (``None``: there is none,
            and the walk reports every hole from version 0).
    """
    if oldest_checkpoint is None:
        return
    below = [*sorted(v for v in commits if v < oldest_checkpoint), oldest_checkpoint]
    for previous, present in itertools.pairwise(below):
        if present == previous + 1:
            continue
        first, last = previous + 1, present - 1
        span = f"version {first}" if first == last else f"versions {first}-{last}"
        findings.report(
            "version-gap",
            f"{span} missing before checkpoint {oldest_checkpoint}, after commit {previous}: "
            f"versions {first}-{oldest_checkpoint - 1} cannot be rebuilt (time travel fails)",
            first,
            storage.log_file(commit_name(first)),
        )


def empty_commit(findings: Findings, version: int, data: bytes | mmap.mmap, path: str) -> bool:
    """Report a commit file that holds no action; whether it was one."""
    try:
        require_actions(data, version=version, path=path)
    except EmptyCommitError:
        findings.report(
            "empty-commit",
            f"commit {version} holds no action ({len(data)} bytes): its write was lost, and "
            "the table state from this version on cannot be known",
            version,
            path,
        )
        return True
    return False
