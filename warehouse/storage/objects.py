"""The object-store backend: a bucket of S3 or of a store that speaks its protocol.

botocore's client does the warehouse's reads and writes: synchronous, its errors carry S3's
codes (s3fs turns them into bare OSErrors, so a wrong key and a missing bucket would read
alike), and its conditional put (`IfNoneMatch="*"`) is what creates a Delta commit only if the
version is free. DuckDB reads local copies of the snapshot's files (`local_copies`): its own
httpfs extension is downloaded at run time, which an offline machine cannot (DuckDB 2.0 has
no wheel of it), and reading through fsspec (s3fs registered as a file system) was 10-20x
slower than copying. Reading local files, a query stays confined by DuckDB's allowed_paths
as over a local warehouse.

Settings and credentials come from the standard AWS variables only (AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ALLOW_HTTP, or
botocore's own chain: profiles, instance roles), which delta-rs reads too: nothing here
prints or stores them.

Correctness rests on the store honouring `If-None-Match: *`: one that ignores it lets two
writers both "create" a version, and one of the commits is lost without a word. So the first
create of a process probes it, writing one key twice, and refuses a store that lets the second
write through.
"""

import concurrent.futures
import contextlib
import io
import os
import uuid
from pathlib import Path

import botocore.session
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from ..errors import WarehouseError, printable
from .base import ChangedObject, Location, Storage

# S3's codes for a request it refused for its credentials
_DENIED = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken",
           "ExpiredToken", "Forbidden", "403"}
_ABSENT = {"NoSuchKey", "404", "NotFound"}
_TAKEN = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409"}


def _region():
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


class ObjectStorage(Storage):
    local = False

    def __init__(self, bucket):
        self.bucket = bucket
        self.endpoint = os.environ.get("AWS_ENDPOINT_URL") or None
        self.client = botocore.session.get_session().create_client(
            "s3", endpoint_url=self.endpoint, region_name=_region(),
            config=Config(retries={"max_attempts": 3, "mode": "standard"},
                          s3={"addressing_style": "path"} if self.endpoint else None))
        self._probed = False

    def __reduce__(self):
        """Sent to a worker process as its bucket: it opens a client of its own."""
        return ObjectStorage, (self.bucket,)

    # -- the interface -----------------------------------------------------------------------

    def exists(self, where):
        try:
            self._head(where)
            return True
        except FileNotFoundError:
            return False

    def is_dir(self, where):
        reply = self._call("list_objects_v2", where, Prefix=_folder(where), MaxKeys=1)
        return reply.get("KeyCount", 0) > 0

    def read_bytes(self, where):
        return self._call("get_object", where, Key=where.key)["Body"].read()

    def size(self, where):
        return self._head(where)["ContentLength"]

    def mark(self, where):
        head = self._head(where)
        return (head.get("ETag"), head["LastModified"].timestamp())

    def create(self, where, data):
        if not self._probed:
            self._probe(where.parent)
        try:
            self._call("put_object", where, Key=where.key, Body=data, IfNoneMatch="*")
        except _Taken:
            raise FileExistsError(str(where)) from None

    def put_file(self, source, where):
        with open(source, "rb") as handle:
            self._call("put_object", where, Key=where.key, Body=handle)

    def put_bytes(self, where, data):
        self._call("put_object", where, Key=where.key, Body=data)

    def unlink_within(self, root, relative):
        if ".." in str(relative).split("/"):
            raise WarehouseError(f"{printable(str(root))}/{printable(str(relative))}: a path "
                                 "leaving its table")
        where = root / relative
        size = self.size(where)
        self.delete(where)
        return size

    def names(self, where):
        names = []
        paginator = self.client.get_paginator("list_objects_v2")
        prefix = _folder(where)
        try:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix, Delimiter="/"):
                names += [item["Prefix"][len(prefix):].rstrip("/")
                          for item in page.get("CommonPrefixes", ())]
                names += [item["Key"][len(prefix):] for item in page.get("Contents", ())]
        except (ClientError, BotoCoreError) as error:
            raise self._error(error, where) from None
        return names

    def delete(self, where):
        self._call("delete_object", where, Key=where.key)

    # -- trace files read as inputs ----------------------------------------------------------

    def stream(self, where):
        """The object's bytes, front to back, as a buffered binary stream (peek, read, tell):
        one GET, read as it is consumed. FileNotFoundError when there is none."""
        body = self._call("get_object", where, Key=where.key)["Body"]
        return io.BufferedReader(_Body(body, lambda error: self._error(error, where)), 1 << 20)

    def read_range(self, where, offset, length):
        """`length` bytes of the object from `offset` (a ranged GET); fewer at its end."""
        if length <= 0:
            return b""
        reply = self._call("get_object", where, Key=where.key,
                           Range=f"bytes={offset}-{offset + length - 1}")
        return reply["Body"].read()

    def keys(self, where, starting=""):
        """The keys under the folder `where` (at any depth) whose path in it starts with
        `starting`, as locations, in key order."""
        found = []
        paginator = self.client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=self.bucket,
                                           Prefix=_folder(where) + starting):
                found += [Location(where.scheme, self.bucket, item["Key"])
                          for item in page.get("Contents", ())]
        except (ClientError, BotoCoreError) as error:
            raise self._error(error, where) from None
        return found

    def delta_options(self):
        """delta-rs reads the same AWS variables itself; the region it needs set."""
        return {"AWS_REGION": _region()}

    def local_copies(self, urls, sizes):
        """Local copies of the objects `urls` (s3://bucket/key of this bucket), downloaded
        once into the cache (see `cache_dir`) on 8 threads: what DuckDB reads. A warehouse's
        data files are immutable (every name is its trace's, new to its ingest), so a copy
        is the object for good; DuckDB reading them over fsspec instead made 2,562 requests,
        55 s of a 76 s `diff` of two 8-rank runs, for 0.4 MB of Parquet. Each copy is
        checked against its size in `sizes` (its add action's, from the Delta log: no
        request per file): an object of another size is not cached, and raises
        ChangedObject (a cached copy of another size is downloaded again)."""
        cache = self.copy_of(Location("s3", self.bucket, ""))

        def fetch(url, size):
            key = url.split("://", 1)[1].split("/", 1)[1]
            copy = self.copy_of(Location("s3", self.bucket, key))
            if not copy.resolve().is_relative_to(cache.resolve()) or ".." in key.split("/"):
                raise WarehouseError(f"{printable(url)}: a file name that leaves its table")
            with contextlib.suppress(FileNotFoundError):
                if copy.stat().st_size == size:
                    return str(copy)
            data = self.read_bytes(Location("s3", self.bucket, key))
            if len(data) != size:
                raise ChangedObject(url, len(data), size)
            copy.parent.mkdir(parents=True, exist_ok=True)
            temporary = copy.with_name(f".{copy.name}.{uuid.uuid4().hex}.tmp")
            temporary.write_bytes(data)
            os.replace(temporary, copy)
            return str(copy)

        with concurrent.futures.ThreadPoolExecutor(8) as pool:  # botocore's client: shareable
            return list(pool.map(fetch, urls, sizes))

    def copy_of(self, where):
        """Where the local copy of `where` (an object, or a folder's) is kept."""
        return cache_dir() / self.bucket / where.key

    # -- requests and their errors -----------------------------------------------------------

    def _probe(self, folder):
        """Refuse a store that does not honour `If-None-Match: *` (see the module)."""
        probe = folder / f".tracewh-probe-{uuid.uuid4().hex}"
        try:
            self._call("put_object", probe, Key=probe.key, Body=b"1", IfNoneMatch="*")
            try:
                self._call("put_object", probe, Key=probe.key, Body=b"2", IfNoneMatch="*")
            except _Taken:
                self._probed = True
                return
            raise WarehouseError(
                f"{printable(self._url())}: the object store does not honour conditional writes "
                "(a second PUT with If-None-Match: * replaced an object instead of failing with "
                "412): two writers could both commit a version of a table and one commit would "
                "be lost, so tracewh does not write there")
        finally:
            self._call("delete_object", probe, Key=probe.key)

    def _head(self, where):
        return self._call("head_object", where, Key=where.key)

    def _call(self, method, where, **arguments):
        try:
            return getattr(self.client, method)(Bucket=self.bucket, **arguments)
        except (ClientError, BotoCoreError) as error:
            raise self._error(error, where) from None

    def _url(self):
        return f"s3://{self.bucket}" + (f" at {self.endpoint}" if self.endpoint else "")

    def _error(self, error, where):
        """The error a failed request is reported by, its secret-free reason in one line."""
        if isinstance(error, ClientError):
            code = str(error.response.get("Error", {}).get("Code", ""))
            if code in _ABSENT:
                return FileNotFoundError(str(where))
            if code in _TAKEN:
                return _Taken(str(where))
            if code in _DENIED:
                return WarehouseError(f"{printable(self._url())}: access denied ({code}): check "
                                      "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and the "
                                      "bucket's policy)")
            if code == "NoSuchBucket":
                return WarehouseError(f"{printable(self._url())}: no such bucket")
            return WarehouseError(f"{printable(str(where))}: the object store refused "
                                  f"({printable(code)})")
        reason = type(error).__name__
        if reason == "NoCredentialsError":
            return WarehouseError(f"{printable(self._url())}: no credentials: set "
                                  "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
        return WarehouseError(f"{printable(self._url())}: cannot reach the object store "
                              f"({reason})")


def cache_dir():
    """Where local copies of objects are kept: $TRACEWH_CACHE, else ~/.cache/tracewh/objects
    ($XDG_CACHE_HOME's). Safe to delete at any time."""
    if os.environ.get("TRACEWH_CACHE"):
        return Path(os.environ["TRACEWH_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "tracewh" / "objects"


class _Body(io.RawIOBase):
    """A GET's streaming body as a raw stream, counting what is read (its `tell`); a
    connection lost midway raised as the store's error (`error`)."""

    def __init__(self, body, error):
        self._body = body
        self._error = error
        self._position = 0

    def readable(self):
        return True

    def readinto(self, buffer):
        try:
            data = self._body.read(len(buffer))
        except (BotoCoreError, OSError) as error:
            raise self._error(error) from None
        buffer[:len(data)] = data
        self._position += len(data)
        return len(data)

    def tell(self):
        return self._position

    def close(self):
        self._body.close()
        super().close()


class _Taken(Exception):
    """A conditional put refused: the name is taken."""


def _folder(where):
    return f"{where.key}/" if where.key else ""

