"""Cut a Chrome-trace JSON document into chunks of whole events, without holding it all.

A trace is one JSON value: an object with a `traceEvents` array (and metadata keys before and
after it), or a bare array of events. `json.load` needs the whole document and 6-7x its size in
RAM. Here the bytes are read in blocks and cut between two top-level events: a cut is a comma
with `}` before it and `{` after it, and msgspec's C parser confirms each one by skipping
`[` + chunk + `]` as a single raw value. Parsing from a known event boundary is deterministic, so
a chunk that skips cleanly ends on a boundary too; a cut that fell inside a nested value fails
and an earlier one is tried. Each chunk is then decoded on its own, in parallel where there are
several.

That confirmation parses every byte a second time, in the one process that feeds all workers.
So with `confirm_cuts=False` (what ingest tries first) a cut is taken unconfirmed and the
chunk's events are counted as its `"ph"` keys; the worker that decodes the chunk checks both
(`check_unconfirmed`): decoding fails on a cut inside a nested value or string (the text before
it cannot close), and a `"ph"` in other places shows as a different count. Either raises
UnconfirmedChunk, and the caller reads the file again with confirmed cuts, which also gives a
malformed file its exact error.

Errors name the byte offset (in the decompressed JSON) where msgspec found the problem.
"""

import json
import os
import re
from dataclasses import dataclass

import msgspec
from msgspec import Raw

from tracewh.errors import TraceError

BLOCK_SIZE = 16 << 20
# The first blocks are smaller and double up to BLOCK_SIZE, so that the first chunks reach the
# workers (and the pipeline fills) at once rather than after a whole block is read and checked.
FIRST_BLOCK_SIZE = 4 << 20
_WHITESPACE = b" \t\r\n"
_OBJECT_PREFIX = b'{"traceEvents":['
_ARRAY_PREFIX = b"["
_BYTE_IN_MESSAGE = re.compile(r"\(byte (\d+)\)")
_MAX_CUT_ATTEMPTS = 32
_PHASE_KEY = b'"ph"'


class UnconfirmedChunk(Exception):
    """An unconfirmed chunk did not hold the events its cut and count promised."""


@dataclass
class Chunk:
    """Whole events as one JSON array. `data` holds its bytes; or, for an uncompressed file
    read by reference, `data` is None and the array is the `length` bytes of the file at
    `offset`, whose first and last bytes (a bracket or a comma) are to be read as `[` and `]`.
    `offset` is the file position of the array's first byte; `first_event` the index of its
    first event in traceEvents; `events` how many it holds, as confirmed by msgspec or, when not
    `confirmed`, as counted from its `"ph"` keys."""

    offset: int
    length: int
    first_event: int
    events: int
    data: bytes | None = None
    confirmed: bool = True

    def load(self, path):
        """The array's bytes (or bytearray), read from `path` when the chunk is by reference."""
        if self.data is not None:
            return self.data
        data = bytearray(self.length)  # read into it: one copy of the bytes, not two
        with open(path, "rb") as handle:
            if os.preadv(handle.fileno(), [data], self.offset) != self.length:
                raise TraceError(path, "cannot read: the file became shorter while it was read")
        data[0], data[-1] = 0x5B, 0x5D
        return data


def check_unconfirmed(chunk, decoded_events):
    """Raise UnconfirmedChunk if an unconfirmed chunk decoded to another number of events than
    its count (callers raise it too when such a chunk does not decode)."""
    if not chunk.confirmed and decoded_events != chunk.events:
        raise UnconfirmedChunk(chunk.first_event, chunk.events, decoded_events)


def decode_error_position(error):
    """The byte position msgspec names in a DecodeError, or None (truncated input)."""
    match = _BYTE_IN_MESSAGE.search(str(error))
    return int(match.group(1)) if match else None


def describe_decode_error(error):
    """msgspec's message without its position, which callers restate as a file offset."""
    text = _BYTE_IN_MESSAGE.sub("", str(error)).strip()
    return text.replace("JSON is malformed: ", "malformed JSON: ")


class TraceReader:
    """Iterate over `chunks()`; afterwards `metadata` holds every top-level key but
    `traceEvents`, as raw JSON values."""

    def __init__(self, stream, path, block_size=None, by_reference=False, confirm_cuts=True):
        self._stream = stream
        self._path = path
        block_size = block_size or BLOCK_SIZE
        self._block_size = block_size
        self._next_block_size = min(FIRST_BLOCK_SIZE, block_size)
        self._by_reference = by_reference  # the stream is the file itself: chunks need no data
        self._confirm_cuts = confirm_cuts
        self._events = 0
        self._buf = bytearray()
        self._buf_offset = 0  # file offset of self._buf[0]
        self._eof = False
        self._prefix = _ARRAY_PREFIX
        self.metadata = {}

    def _fail(self, problem, offset=None):
        where = f" at byte {offset}" if offset is not None else ""
        raise TraceError(self._path, f"{problem}{where}")

    def _read_block(self):
        if self._eof:
            return False
        end = len(self._buf)
        size = self._next_block_size
        self._next_block_size = min(2 * size, self._block_size)
        self._buf.extend(bytes(size))
        try:
            with memoryview(self._buf) as view:
                count = self._stream.readinto(view[end:])
        except (OSError, EOFError) as error:  # gzip: truncated or corrupt stream
            self._fail(f"cannot read: {error}")
        del self._buf[end + (count or 0):]
        if not count:
            self._eof = True
            return False
        return True

    def _drop(self, count):
        del self._buf[:count]
        self._buf_offset += count

    def chunks(self):
        start = self._open_document()
        while True:
            found = self._last_boundary(start)
            if found is not None:
                cut, count = found
                data = None
                if not self._by_reference:
                    data = b"[" + bytes(self._buf[start:cut]) + b"]"
                yield Chunk(self._buf_offset + start - 1, cut - start + 2, self._events, count,
                            data, self._confirm_cuts)
                self._events += count
                self._drop(cut)  # keep the comma: it stands for the next chunk's `[`
                start = 1
            if not self._read_block():
                break
        try:
            yield from self._close_document(start)
        except TraceError:
            if self._confirm_cuts:
                raise
            raise UnconfirmedChunk(self._events) from None  # the last cut may be to blame

    # -- the document's head: where the events start --------------------------------------

    def _open_document(self):
        """Read up to the first event; return its index in the buffer."""
        while True:
            start = self._skip_whitespace(0)
            if start < len(self._buf) or not self._read_block():
                break
        if start >= len(self._buf):
            self._fail("empty file: no JSON in it")
        first = self._buf[start : start + 1]
        if first == b"[":
            element = self._skip_whitespace(start + 1)
            if self._buf[element : element + 1] == b"[":
                self._fail("not a trace: a JSON array of arrays, not of events; it looks like a "
                           "PyTorch memory timeline (export_memory_timeline): ingest the trace "
                           "that export_chrome_trace or on_trace_ready writes", start)
            return start + 1
        if first != b"{":
            self._fail(f"not a JSON trace: starts with {self._buf[start:start + 16]!r}", 0)
        self._prefix = _OBJECT_PREFIX
        return self._open_object(start)

    def _skip_whitespace(self, index):
        buf = self._buf
        if index == 0 and buf.startswith(b"\xef\xbb\xbf"):
            index = 3
        while index < len(buf) and buf[index] in _WHITESPACE:
            index += 1
        return index

    def _open_object(self, start):
        search = start
        while True:
            key = self._buf.find(b'"traceEvents"', search)
            if key < 0:
                if self._read_block():
                    continue
                self._reject_object_without_events()
            header = self._buf[start:key] + b'"traceEvents":null}'
            try:
                header_keys = msgspec.json.decode(header, type=dict[str, Raw])
            except (msgspec.DecodeError, msgspec.ValidationError):
                search = key + 1  # the name inside a nested value or string: look further
                continue
            del header_keys["traceEvents"]
            self._check_unique_keys(header, self._buf_offset + start)
            self.metadata.update(header_keys)
            while len(self._buf) < key + 4096 and self._read_block():
                pass
            colon = self._skip_whitespace(key + len(b'"traceEvents"'))
            value = self._skip_whitespace(colon + 1)
            found = bytes(self._buf[value : value + 1]) if self._buf[colon : colon + 1] == b":" else b"?"
            if found != b"[":
                kind = {b"{": "an object", b'"': "a string", b"": "nothing"}.get(found, "not a list")
                self._fail(f"traceEvents must be a list of events, found {kind}",
                           self._buf_offset + value)
            return value + 1

    def _reject_object_without_events(self):
        """The whole (small) document is in the buffer: say what it is instead."""
        try:
            document = msgspec.json.decode(self._buf, type=dict[str, Raw])
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            self._fail(describe_decode_error(error), decode_error_position(error))
        keys = ", ".join(sorted(document)[:8]) or "none"
        self._fail(f"not a trace: a JSON object without traceEvents (keys: {keys})")

    def _check_unique_keys(self, text, offset):
        """Refuse a repeated top-level key of the document (msgspec keeps the last silently)."""
        def unique(pairs):
            keys = [key for key, _ in pairs]
            if len(keys) != len(set(keys)):
                repeated = next(k for k in keys if keys.count(k) > 1)
                self._fail(f"duplicate key {repeated!r} in the trace's top-level object", offset)

        json.loads(bytes(text), object_pairs_hook=unique)

    # -- cutting between events -------------------------------------------------------------

    def _candidate_cuts(self, start):
        """Commas between `}` and `{`, last first."""
        buf = self._buf
        index = len(buf)
        while True:
            index = buf.rfind(b"{", start, index)
            if index <= start:
                return
            comma = index - 1
            while comma > start and buf[comma] in _WHITESPACE:
                comma -= 1
            if buf[comma] != 0x2C:
                continue
            brace = comma - 1
            while brace > start and buf[brace] in _WHITESPACE:
                brace -= 1
            if buf[brace] == 0x7D:
                yield comma

    def _last_boundary(self, start):
        """(cut, events before it): the last cut in the buffer that msgspec confirms, or the last
        candidate when cuts go unconfirmed; None if more data is needed."""
        if not self._confirm_cuts:
            cut = next(self._candidate_cuts(start), None)
            return None if cut is None else (cut, self._buf.count(_PHASE_KEY, start, cut))
        limit = len(self._buf)
        for attempt, cut in enumerate(self._candidate_cuts(start)):
            if cut >= limit:
                continue  # the data before `limit` is already known to be broken
            if attempt >= _MAX_CUT_ATTEMPTS:
                return None
            try:
                return cut, self._count_events(start, cut)
            except msgspec.DecodeError as error:
                position = decode_error_position(error)
                if position is None:
                    continue
                limit = start - 1 + position
                if limit < cut:
                    if not any(c < limit for c in self._candidate_cuts(start)):
                        self._fail(describe_decode_error(error), self._buf_offset + limit)
        return None

    def _count_events(self, start, cut):
        """Validate buf[start-1 : cut+1] read as `[` ... `]` and count its events, in place:
        the bytes standing for the brackets are swapped in and back."""
        buf = self._buf
        opening, closing = buf[start - 1], buf[cut]
        buf[start - 1], buf[cut] = 0x5B, 0x5D
        try:
            with memoryview(buf) as view:
                return len(msgspec.json.decode(view[start - 1 : cut + 1], type=list[Raw]))
        finally:
            buf[start - 1], buf[cut] = opening, closing

    # -- the document's tail ------------------------------------------------------------------

    def _close_document(self, start):
        data = self._prefix + bytes(self._buf[start:])
        base = self._buf_offset + start - len(self._prefix)
        try:
            if self._prefix is _ARRAY_PREFIX:
                events = data
            else:
                tail = msgspec.json.decode(data, type=dict[str, Raw])
                events = bytes(tail.pop("traceEvents"))
                after = data[len(self._prefix) - 1 + len(events):]  # what follows the events
                self._check_unique_keys(b'{"traceEvents":null' + after, None)
                self.metadata.update(tail)
            count = len(msgspec.json.decode(events, type=list[Raw]))
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            position = decode_error_position(error)
            if position is None:
                self._fail("truncated: the JSON ends before the trace is complete")
            self._fail(describe_decode_error(error), base + position)
        self._drop(len(self._buf))
        yield Chunk(base + len(self._prefix) - 1, len(events), self._events, count, events)
        self._events += count

    @property
    def events(self):
        """Events counted so far (all of them once `chunks()` is exhausted)."""
        return self._events
