"""S3 + DynamoDB log store, interoperable with delta-spark's ``S3DynamoDBLogStore``.

The DynamoDB table has delta-spark's layout exactly, so deltalog and delta-spark writers can
share one Delta table and one DynamoDB table:

* hash key ``tablePath`` (S): the table root as written in the URI, e.g. ``s3://bucket/t``
  (delta-spark writes the scheme it was given, so both must use the same, ``s3`` or ``s3a``);
* range key ``fileName`` (S): ``00000000000000000007.json``;
* ``tempPath`` (S): ``.tmp/<fileName>.<uuid>``, relative to ``_delta_log``;
* ``complete`` (S): ``"true"`` or ``"false"``;
* ``expireTime`` (N): epoch seconds, set on complete entries; the table's TTL attribute.

Options (``storage_options``), with delta-rs' names accepted where they exist:

``s3.dynamodb.table_name`` (``delta_dynamo_table_name``, env ``DELTA_DYNAMO_TABLE_NAME``)
    default ``delta_log``, as delta-spark;
``s3.dynamodb.endpoint`` (``aws_endpoint_url_dynamodb``), ``s3.dynamodb.region``;
``s3.dynamodb.create_table``
    ``true`` creates the table when missing (with TTL on ``expireTime``), provisioned with
    ``s3.dynamodb.rcu``/``s3.dynamodb.wcu`` (default 5/5);
``s3.dynamodb.ttl_seconds``
    lifetime of complete entries (default one day; shorter risks lost commits).
"""

from __future__ import annotations

import json
import shlex
import time
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from .errors import FileAlreadyExistsError, StoreConfigurationError
from .external import DEFAULT_TTL_SECONDS, ExternalCommitEntry, ExternalCoordinatedLogStore
from .options import StoreOptions
from .retry import StoreRetryPolicy, call_with_retries, create_with_retries
from .s3 import AwsConnection, S3LogStore, aws_errors, error_code, map_aws_error

ATTR_TABLE_PATH = "tablePath"
ATTR_FILE_NAME = "fileName"
ATTR_TEMP_PATH = "tempPath"
ATTR_COMPLETE = "complete"
ATTR_EXPIRE_TIME = "expireTime"
DEFAULT_TABLE_NAME = "delta_log"
_TABLE_WAIT_SECONDS = 60.0


def entry_to_item(entry: ExternalCommitEntry) -> dict[str, dict[str, str]]:
    """The DynamoDB item of an entry, attribute for attribute as delta-spark writes it."""
    item = {
        ATTR_TABLE_PATH: {"S": entry.table_path},
        ATTR_FILE_NAME: {"S": entry.file_name},
        ATTR_TEMP_PATH: {"S": entry.temp_path},
        ATTR_COMPLETE: {"S": "true" if entry.complete else "false"},
    }
    if entry.expire_time is not None:
        item[ATTR_EXPIRE_TIME] = {"N": str(entry.expire_time)}
    return item


def item_to_entry(item: dict[str, Any]) -> ExternalCommitEntry:
    """Parse a DynamoDB item written by deltalog or delta-spark.

    Raises:
        StoreConfigurationError: The item lacks the attributes of the layout.
    """
    try:
        expire = item.get(ATTR_EXPIRE_TIME)
        return ExternalCommitEntry(
            table_path=item[ATTR_TABLE_PATH]["S"],
            file_name=item[ATTR_FILE_NAME]["S"],
            temp_path=item[ATTR_TEMP_PATH]["S"],
            complete=item[ATTR_COMPLETE]["S"] == "true",
            expire_time=int(expire["N"]) if expire else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreConfigurationError(
            f"DynamoDB item does not have the S3DynamoDBLogStore layout: {sorted(item)}"
        ) from exc


class S3DynamoDBLogStore(ExternalCoordinatedLogStore):
    """Commits on S3 arbitrated by conditional puts into a DynamoDB table.

    Args:
        objects: The S3 store holding the files.
        client: A boto3 DynamoDB client.
        table_name: The DynamoDB table.
        ttl_seconds: Lifetime of complete entries.
        retry: Backoff for throttled DynamoDB requests.
    """

    def __init__(
        self,
        objects: S3LogStore,
        client: Any,
        table_name: str = DEFAULT_TABLE_NAME,
        *,
        ttl_seconds: int = DEFAULT_TTL_SECONDS,
        retry: StoreRetryPolicy | None = None,
    ) -> None:
        super().__init__(objects, ttl_seconds)
        self.client = client
        self.table_name = table_name
        self.retry = retry or objects.retry

    @classmethod
    def from_options(
        cls, objects: S3LogStore, opts: StoreOptions, connection: AwsConnection
    ) -> S3DynamoDBLogStore:
        """Build the store from ``s3.dynamodb.*`` options, creating the table if asked.

        Raises:
            StoreConfigurationError: The table is missing (and not to be created) or the
                options are invalid.
        """
        table = opts.get(
            "s3.dynamodb.table_name",
            "delta_dynamo_table_name",
            "dynamo_table_name",
            env=("DELTA_DYNAMO_TABLE_NAME",),
        )
        client = connection.client(
            "dynamodb",
            endpoint=opts.get("s3.dynamodb.endpoint", "aws_endpoint_url_dynamodb"),
            region=opts.get("s3.dynamodb.region", "aws_region_dynamodb"),
        )
        store = cls(
            objects,
            client,
            table or DEFAULT_TABLE_NAME,
            ttl_seconds=opts.get_int("s3.dynamodb.ttl_seconds", default=DEFAULT_TTL_SECONDS),
        )
        store.ensure_table(
            create=opts.get_bool("s3.dynamodb.create_table", default=False),
            rcu=opts.get_int("s3.dynamodb.rcu", default=5, minimum=1),
            wcu=opts.get_int("s3.dynamodb.wcu", default=5, minimum=1),
        )
        return store

    def _call(self, what: str, operation: str, **kwargs: Any) -> Any:
        def request() -> Any:
            with aws_errors(f"DynamoDB {operation} on {self.table_name} ({what})"):
                return getattr(self.client, operation)(**kwargs)

        return call_with_retries(request, self.retry)

    def ensure_table(self, *, create: bool, rcu: int = 5, wcu: int = 5) -> None:
        """Check that the table exists and is active; create it when ``create`` is set.

        Raises:
            StoreConfigurationError: The table is missing and ``create`` is false, or it did
                not become active in time.
        """
        deadline = time.monotonic() + _TABLE_WAIT_SECONDS
        created = False
        while True:
            try:
                status = self._describe_status()
            except _TableMissing:
                if not create:
                    raise StoreConfigurationError(
                        f"DynamoDB table {self.table_name!r} does not exist. Create it (hash key "
                        f"{ATTR_TABLE_PATH} S, range key {ATTR_FILE_NAME} S, TTL on "
                        f"{ATTR_EXPIRE_TIME}) or set s3.dynamodb.create_table=true"
                    ) from None
                created = self._create(rcu, wcu) or created
                if time.monotonic() > deadline:
                    raise StoreConfigurationError(
                        f"DynamoDB table {self.table_name!r} did not appear after creation"
                    ) from None
                time.sleep(0.2)  # polling the service for a state change, not synchronising
                continue
            if status == "ACTIVE":
                break
            if time.monotonic() > deadline:
                raise StoreConfigurationError(
                    f"DynamoDB table {self.table_name!r} is {status}, not ACTIVE"
                )
            time.sleep(0.2)  # polling the service for a state change, not synchronising
        if created:
            self._call(
                "enable TTL",
                "update_time_to_live",
                TableName=self.table_name,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": ATTR_EXPIRE_TIME},
            )

    def _describe_status(self) -> str:
        try:
            response = self.client.describe_table(TableName=self.table_name)
        except ClientError as exc:
            if error_code(exc) == "ResourceNotFoundException":
                raise _TableMissing from exc
            raise map_aws_error(exc, f"DynamoDB describe_table {self.table_name}") from exc
        except BotoCoreError as exc:
            raise map_aws_error(exc, f"DynamoDB describe_table {self.table_name}") from exc
        return str(response["Table"]["TableStatus"])

    def _create(self, rcu: int, wcu: int) -> bool:
        try:
            self.client.create_table(
                TableName=self.table_name,
                AttributeDefinitions=[
                    {"AttributeName": ATTR_TABLE_PATH, "AttributeType": "S"},
                    {"AttributeName": ATTR_FILE_NAME, "AttributeType": "S"},
                ],
                KeySchema=[
                    {"AttributeName": ATTR_TABLE_PATH, "KeyType": "HASH"},
                    {"AttributeName": ATTR_FILE_NAME, "KeyType": "RANGE"},
                ],
                ProvisionedThroughput={"ReadCapacityUnits": rcu, "WriteCapacityUnits": wcu},
            )
        except ClientError as exc:
            if error_code(exc) == "ResourceInUseException":  # created concurrently
                return False
            raise map_aws_error(exc, f"DynamoDB create_table {self.table_name}") from exc
        except BotoCoreError as exc:
            raise map_aws_error(exc, f"DynamoDB create_table {self.table_name}") from exc
        return True

    # ------------------------------------------------------------------ hooks

    def describe_entry(self, entry: ExternalCommitEntry) -> str:  # noqa: D102
        return (
            f"the DynamoDB table {self.table_name!r} (key {ATTR_TABLE_PATH}="
            f"{entry.table_path!r}, {ATTR_FILE_NAME}={entry.file_name!r})"
        )

    def delete_entry_command(self, entry: ExternalCommitEntry) -> str:  # noqa: D102
        key = json.dumps(
            {ATTR_TABLE_PATH: {"S": entry.table_path}, ATTR_FILE_NAME: {"S": entry.file_name}}
        )
        return (
            f"aws dynamodb delete-item --table-name {shlex.quote(self.table_name)} "
            f"--key {shlex.quote(key)}"
        )

    def put_entry(self, entry: ExternalCommitEntry, *, overwrite: bool) -> None:  # noqa: D102
        kwargs: dict[str, Any] = {"TableName": self.table_name, "Item": entry_to_item(entry)}
        if not overwrite:
            kwargs["ConditionExpression"] = f"attribute_not_exists({ATTR_FILE_NAME})"

        def request() -> None:
            try:
                self.client.put_item(**kwargs)
            except ClientError as exc:
                if error_code(exc) == "ConditionalCheckFailedException":
                    raise FileAlreadyExistsError(
                        f"already exists: {entry.file_path} (DynamoDB entry)"
                    ) from exc
                raise map_aws_error(exc, f"DynamoDB put_item {entry.file_path}") from exc
            except BotoCoreError as exc:
                raise map_aws_error(exc, f"DynamoDB put_item {entry.file_path}") from exc

        def ours() -> bool:  # our temp path (a fresh uuid) identifies our attempt
            stored = self.get_entry(entry.table_path, entry.file_name)
            return stored is not None and stored.temp_path == entry.temp_path

        create_with_retries(request, self.retry, landed=ours)

    def get_entry(self, table_path: str, file_name: str) -> ExternalCommitEntry | None:  # noqa: D102
        response = self._call(
            file_name,
            "get_item",
            TableName=self.table_name,
            Key={ATTR_TABLE_PATH: {"S": table_path}, ATTR_FILE_NAME: {"S": file_name}},
            ConsistentRead=True,
        )
        item = response.get("Item")
        return item_to_entry(item) if item else None

    def get_latest_entry(self, table_path: str) -> ExternalCommitEntry | None:  # noqa: D102
        response = self._call(
            table_path,
            "query",
            TableName=self.table_name,
            KeyConditionExpression=f"{ATTR_TABLE_PATH} = :p",
            ExpressionAttributeValues={":p": {"S": table_path}},
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=True,
        )
        items = response.get("Items") or []
        return item_to_entry(items[0]) if items else None


class _TableMissing(Exception):
    pass
