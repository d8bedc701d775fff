"""Rules for the actions of one commit (or checkpoint), and their replay into a state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from deltalog.check.findings import Findings
from deltalog.check.state import Layout, Layouts, LiveFile, TableState, fingerprint
from deltalog.check.stats import stats_problems
from deltalog.errors import InvalidPathError, PartitionValueError, UnsupportedFeatureError
from deltalog.log.file_actions import canonical_path, file_key, scheme_prefix
from deltalog.protocol.actions import (
    Action,
    AddCDCFile,
    AddFile,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
)
from deltalog.protocol.deletion_vectors import is_dv_tombstone
from deltalog.protocol.features import DELTA_WRITER_FEATURES, check_readable
from deltalog.protocol.partitions import parse_partition_value
from deltalog.protocol.paths import check_action_path
from deltalog.protocol.properties import property_problems


class ActionChecks:
    """Checks actions against the protocol's rules and the table they apply to.

    Args:
        root: The table root, in the store's notation.
        findings: Where problems go.
    """

    def __init__(self, root: str, findings: Findings) -> None:
        self.root = root
        self.prefix = scheme_prefix(root)
        self.findings = findings
        self.layouts = Layouts(findings)

    def action_set(self, version: int, path: str, actions: Sequence[Action]) -> None:
        """Rules within one commit: what may appear once, and safe file paths."""
        report = self.findings.report
        counts = {"metadata": 0, "protocol": 0}
        txns: set[str] = set()
        domains: set[str] = set()
        paths: dict[bool, set[str]] = {True: set(), False: set()}
        keys: dict[bool, set[str]] = {True: set(), False: set()}
        for action in actions:
            if isinstance(action, Metadata):
                counts["metadata"] += 1
            elif isinstance(action, Protocol):
                counts["protocol"] += 1
            elif isinstance(action, Txn):
                if action.app_id in txns:
                    report("duplicate-txn", f"two txns for app {action.app_id!r}", version, path)
                txns.add(action.app_id)
            elif isinstance(action, DomainMetadata):
                if action.domain in domains:
                    report("duplicate-domain", f"two actions for {action.domain!r}", version, path)
                domains.add(action.domain)
            elif isinstance(action, AddFile | RemoveFile | AddCDCFile):
                self.path(action.path, version, path)
                if isinstance(action, AddCDCFile):
                    continue
                adding = isinstance(action, AddFile)
                canon = canonical_path(action.path, self.prefix)
                if canon in paths[adding]:
                    code, verb = (
                        ("duplicate-add", "adds") if adding else ("duplicate-remove", "removes")
                    )
                    report(code, f"commit {version} {verb} {action.path!r} twice", version, path)
                paths[adding].add(canon)
                keys[adding].add(file_key(action.path, action.dv_id, self.prefix))
        for kind, count in counts.items():
            if count > 1:
                report(
                    f"multiple-{kind}",
                    f"commit {version} has {count} {kind} actions",
                    version,
                    path,
                )
        for key in sorted(keys[True] & keys[False]):
            file = key.split("\x00")[0]
            report(
                "duplicate-file-action",
                f"commit {version} adds and removes {file!r}",
                version,
                path,
            )

    def path(self, action_path: str, version: int | None, where: str | None) -> None:
        """Refuse paths that leave the table or its bucket; note ones outside the root."""
        try:
            external = check_action_path(action_path, self.root)
        except InvalidPathError as exc:
            self.findings.report("unsafe-path", str(exc), version, where)
            return
        if external:
            message = f"{action_path!r} is outside the table root"
            self.findings.report("external-path", message, version, where)

    def protocol(self, protocol: Protocol, version: int, path: str) -> None:
        """The protocol's features must be known."""
        try:
            check_readable(protocol)
        except UnsupportedFeatureError as exc:
            self.findings.report("unsupported-reader-feature", str(exc), version, path)
        unknown = sorted(set(protocol.writer_features or ()) - DELTA_WRITER_FEATURES)
        if unknown:
            self.findings.report(
                "unsupported-writer-feature",
                f"the protocol names writer features Delta does not define: {unknown}",
                version,
                path,
            )

    def file(
        self,
        action_path: str,
        partition_values: Mapping[str, str | None],
        stats: str | None,
        layout: Layout | None,
        version: int,
    ) -> None:
        """An added file's partition values and statistics against the table's layout."""
        if layout is None:
            return
        report = self.findings.report
        types = layout.partition_types()
        if set(partition_values) != set(types):
            report(
                "bad-partition-values",
                f"{action_path!r} has partition values for {sorted(partition_values)}, "
                f"the table is partitioned by {sorted(types)}",
                version,
                action_path,
            )
        else:
            for name, text in partition_values.items():
                try:
                    parse_partition_value(text, types[name])
                except PartitionValueError as exc:
                    report("bad-partition-values", f"{action_path!r}: {exc}", version, action_path)
        if stats is not None:
            for code, message in stats_problems(
                stats, layout.schema, layout.partition_columns, physical=layout.physical
            ):
                report(code, f"{action_path!r}: {message}", version, action_path)

    def apply(self, state: TableState, version: int, actions: Sequence[Action], path: str) -> None:
        """Replay one commit's actions into ``state``, checking each against it."""
        for action in actions:
            if isinstance(action, Protocol):
                state.protocol = action
                self.protocol(action, version, path)
            elif isinstance(action, Metadata):
                state.metadata = action
                for problem in property_problems(action.configuration):
                    self.findings.report("bad-table-property", problem, version, path)
            elif isinstance(action, Txn):
                state.txns[action.app_id] = action.version
            elif isinstance(action, DomainMetadata):
                if action.removed:
                    state.domains.pop(action.domain, None)
                else:
                    state.domains[action.domain] = action.configuration
        layout = self.layouts.of(state.metadata, version, path) if state.metadata else None
        for action in actions:
            if isinstance(action, RemoveFile):
                key = file_key(action.path, action.dv_id, self.prefix)
                state.fingerprints.pop(key, None)
                if state.files.pop(key, None) is None and not is_dv_tombstone(
                    action.path, action.deletion_vector
                ):
                    self.findings.report(
                        "remove-of-missing-file",
                        f"commit {version} removes {action.path!r}, which is not live",
                        version,
                        path,
                    )
                state.removed.add(canonical_path(action.path, self.prefix))
        for action in actions:
            if isinstance(action, AddFile):
                self.file(action.path, action.partition_values, action.stats, layout, version)
                values = tuple(sorted(action.partition_values.items()))
                key = file_key(action.path, action.dv_id, self.prefix)
                state.files[key] = LiveFile(action.path, action.size, values, version)
                state.fingerprints[key] = fingerprint(
                    key, action.size, action.partition_values, action.stats
                )
