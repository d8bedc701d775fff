"""Opening an ``s3://`` table's log store: the commit protocol decides which store it is.

``s3.commit_protocol`` (or the delta-rs spellings it accepts) picks conditional put
(:class:`~logstores.s3.S3LogStore` with ``If-None-Match``), delta-spark's S3 + DynamoDB protocol
(:class:`~logstores.dynamodb.S3DynamoDBLogStore` over an S3 store whose creates use
``If-None-Match`` where the server has it and check before they put where not, or always check
with ``s3.dynamodb.if_none_match=false``),
or the unsafe single-writer mode. This sits above both stores, so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Mapping

from .base import LogStore
from .dynamodb import S3DynamoDBLogStore
from .options import StoreOptions, redact_uri, split_bucket_url
from .retry import StoreRetryPolicy
from .s3 import (
    DYNAMODB,
    KNOWN_OPTIONS,
    UNSAFE_SINGLE_WRITER,
    CreateMode,
    S3LogStore,
    commit_protocol_from_options,
    connection_from_options,
    log,
)


class S3Stores:
    """The ``s3://``/``s3a://`` entry of the store registry."""

    @classmethod
    def from_uri(cls, uri: str, options: Mapping[str, str]) -> tuple[LogStore, str]:
        """The store for ``s3://bucket/path`` from ``storage_options``, by commit protocol.

        Raises:
            UnsafeStoreConfigurationError: No commit protocol is configured.
            StoreConfigurationError: Bad or conflicting options.
        """
        prefix, bucket, key = split_bucket_url(uri)
        opts = StoreOptions(options, "s3.", KNOWN_OPTIONS)
        protocol = commit_protocol_from_options(opts)
        connection = connection_from_options(opts)
        retry = StoreRetryPolicy(max_attempts=opts.get_int("s3.max_attempts", default=8, minimum=1))
        root = prefix + key if key else prefix.rstrip("/")
        client = connection.client("s3")
        if protocol == DYNAMODB:
            conditional = opts.get_bool("s3.dynamodb.if_none_match", default=True)
            mode: CreateMode = "if-none-match-else-check" if conditional else "check-then-put"
            objects = S3LogStore(client, prefix, bucket, create_mode=mode, retry=retry)
            return S3DynamoDBLogStore.from_options(objects, opts, connection), root
        if protocol == UNSAFE_SINGLE_WRITER:
            log.warning(
                "%s: s3.commit_protocol=unsafe-single-writer; concurrent writers can lose commits",
                redact_uri(uri),
            )
            return S3LogStore(
                client, prefix, bucket, create_mode="check-then-put", retry=retry
            ), root
        return S3LogStore(client, prefix, bucket, retry=retry), root
