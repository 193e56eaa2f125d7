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

Hostile input is bounded. Whitespace before the first event, between events and after the
document streams through (dropped as it is read, never buffered: a gzip of a few MB can hold
GBs of it). Anything else must end within `max_event_size` bytes: an event or top-level value
larger than that (a 3 GB string, whitespace inside an event) is refused where it starts, as is
a file whose JSON text passes `max_json_size` (a decompression bomb), and nesting too deep for
the decoders (msgspec and json recurse in C and Python) is named with the byte where it passes
MAX_NESTING levels.
"""

import json
import re
from dataclasses import dataclass

import msgspec
from msgspec import Raw

from tracewh.errors import HINT, TraceError

from .sources import read_range

try:
    from ._decode import count_phase_keys
except ImportError:  # the native core not built: Python's own count
    def count_phase_keys(data, start, end):
        return data.count(_PHASE_KEY, start, end)

BLOCK_SIZE = 16 << 20
# The largest event or top-level value read by default: real events are at most a few KB (the
# largest in ../shared is 7 KB: a kernel's args), so this only stops a value that would take GBs.
MAX_EVENT_SIZE = 64 << 20
# Nesting that every decoder reads within Python's default recursion limit (1,000 frames, which
# msgspec and json share with the caller's stack); deeper JSON may fail, and is then reported
# with the byte where it passes this many levels.
MAX_NESTING = 500
# A run of whitespace at least this long at the end of the buffer is looked at: dropped if it is
# between events or after the document, else counted in the value it is part of.
WHITESPACE_RUN = 1 << 20
# The first blocks are smaller and double up to BLOCK_SIZE, so that the first chunks reach the
# workers (and the pipeline fills) at once rather than after a whole block is read and checked.
FIRST_BLOCK_SIZE = 4 << 20
# A block is read in pieces of this size, each appended to the buffer as it comes: a whole
# block read at once was 16 MB more of the ingest's command, which keeps its heap's peak
# (`tracewh.allocator`) while its workers decode and measure.
PIECE_SIZE = 1 << 20
_WHITESPACE = b" \t\r\n"
_OBJECT_PREFIX = b'{"traceEvents":['
_ARRAY_PREFIX = b"["
_BYTE_IN_MESSAGE = re.compile(r"\(byte (\d+)\)")
_MAX_CUT_ATTEMPTS = 32
_PHASE_KEY = b'"ph"'
# A JSON string (escapes included) or a bracket: what nesting is counted from.
_NESTING_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')

# (cli_hint, library_hint): the option that raises a size limit, and the API's argument
_RAISES_JSON_SIZE = ("--max-json-size", "max_json_size")
_RAISES_EVENT_SIZE = ("--max-event-size", "max_event_size")


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
        """The array's bytes (or bytearray), read from `path` when the chunk is by reference
        (a ranged read of an object)."""
        if self.data is not None:
            return self.data
        data = read_range(path, self.offset, self.length)
        if len(data) != self.length:
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


def format_size(size):
    """A byte count as a user writes it for a size option (MB and GB of 2**20 and 2**30)."""
    for unit, shift in (("TB", 40), ("GB", 30), ("MB", 20), ("KB", 10)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):,.3g} {unit}"
    return f"{size} bytes"


def nesting_error(path, data, offset):
    """The TraceError for a RecursionError while decoding `data` (file offset `offset`): the
    byte where its nesting passes MAX_NESTING levels, counted from data's start (brackets that
    close values begun before it are passed over), strings skipped. Scanned only once decoding
    failed, so reading costs nothing."""
    depth = deepest = where = 0
    for match in _NESTING_TOKEN.finditer(data):
        byte = data[match.start()]
        if byte in b"[{":
            depth += 1
            if depth > MAX_NESTING:
                return TraceError(path, f"nesting deeper than {MAX_NESTING} levels at byte "
                                        f"{offset + match.start()}")
            if depth > deepest:
                deepest, where = depth, match.start()
        elif byte in b"]}":
            depth = max(depth - 1, 0)
    return TraceError(path, f"nesting too deep to decode: {deepest} levels at byte "
                            f"{offset + where}, with the stack already in use")


def _content_before(buf, low, high):
    """The index after the last byte of buf[low:high] that is not whitespace (`low` if none),
    at C speed however long the whitespace: windows growing 16-fold, whitespace deleted."""
    size = 64
    while high > low:
        begin = max(low, high - size)
        content = buf[begin:high].translate(None, _WHITESPACE)
        if content:
            return buf.rfind(content[-1:], begin, high) + 1
        high, size = begin, size * 16
    return low


def _content_after(buf, low):
    """The index of the first byte from `low` on that is not whitespace (len(buf) if none),
    as _content_before."""
    size = 64
    while low < len(buf):
        window = buf[low : low + size]
        content = window.translate(None, _WHITESPACE)
        if content:
            return buf.find(content[:1], low)
        low, size = low + len(window), size * 16
    return len(buf)


class TraceReader:
    """Iterate over `chunks()`; afterwards `metadata` holds every top-level key but
    `traceEvents`, as raw JSON values. `max_event_size` bounds any one event or top-level
    value; `max_json_size`, when given, the JSON text read from the stream."""

    def __init__(self, stream, path, block_size=None, by_reference=False, confirm_cuts=True,
                 max_event_size=MAX_EVENT_SIZE, max_json_size=None):
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
        self._max_event_size = max_event_size
        self._max_json_size = max_json_size
        self._read = 0  # bytes read from the stream
        self._separator_due = False  # the last chunk ended before the `,` that follows it
        self._scanned = (-1, -1)  # file offsets: whitespace from the first to the second
        self.metadata = {}

    def _fail(self, problem, offset=None, hints=("", "")):
        """Raise the TraceError of `problem`, at a byte `offset` of the file; `hints`: the
        (cli_hint, library_hint) at HINT in it."""
        where = f" at byte {offset}" if offset is not None else ""
        raise TraceError(self._path, f"{problem}{where}", *hints)

    def _fail_after_cuts(self, problem, offset, hints=("", "")):
        """Fail; or, after a cut taken unconfirmed, which may be to blame, ask for a confirmed
        reading (which then fails for good)."""
        if not self._confirm_cuts and self._events:
            raise UnconfirmedChunk(self._events)
        self._fail(problem, offset, hints)

    def _read_block(self):
        if self._eof:
            return False
        size = self._next_block_size
        self._next_block_size = min(2 * size, self._block_size)
        # A block read as new bytes and appended: 2.5x less CPU than growing the buffer by a
        # zero-filled block to read into (which the parent process, feeding every worker,
        # spent 0.2 s of a 254 MB trace's ingest on); a piece at a time, so that the bytes
        # read beside the buffer are a piece, not a block (see PIECE_SIZE).
        read = 0
        try:
            while read < size:
                piece = self._stream.read(min(PIECE_SIZE, size - read))
                if not piece:
                    break
                self._buf += piece
                read += len(piece)
        except (OSError, EOFError) as error:  # gzip: truncated or corrupt stream
            self._fail(f"cannot read: {error}")
        if not read:
            self._eof = True
            return False
        self._read += read
        if self._max_json_size is not None and self._read > self._max_json_size:
            self._fail(f"more than {format_size(self._max_json_size)} of JSON (decompressed), "
                       f"the limit: {HINT} raises it", hints=_RAISES_JSON_SIZE)
        return True

    def _drop(self, count):
        del self._buf[:count]
        self._buf_offset += count

    def chunks(self):
        try:
            yield from self._chunks()
        except RecursionError:
            raise nesting_error(self._path, self._buf, self._buf_offset) from None

    def _chunks(self):
        start = self._open_document()
        complete = False
        while True:
            start = self._past_whitespace(start)
            found = None if self._separator_due else self._last_boundary(start)
            content = self._content_end(start)
            if found is None and len(self._buf) - content >= WHITESPACE_RUN:
                found = self._boundary_before_whitespace(start, content)
                complete = found is None and self._document_ends(start, content)
            if found is not None:
                cut, count = found
                yield self._chunk(start, cut, count)
                self._events += count
                self._drop(cut)  # keep the comma: it stands for the next chunk's `[`
                start = self._past_whitespace(1)  # before more is read after it
            elif content - start > self._max_event_size:
                self._fail_after_cuts(
                    f"an event or value larger than {format_size(self._max_event_size)}, the "
                    f"limit ({HINT} raises it), starting",
                    self._buf_offset + self._skip_whitespace(start), _RAISES_EVENT_SIZE)
            if complete or not self._read_block():
                break
        try:
            yield from self._close_document(start, content if complete else None)
        except TraceError:
            if self._confirm_cuts:
                raise
            raise UnconfirmedChunk(self._events) from None  # the last cut may be to blame
        if complete:
            self._expect_only_whitespace()

    def _chunk(self, start, cut, count):
        """buf[start - 1 : cut + 1] as a Chunk, its first and last bytes read as `[` and `]`."""
        data = None if self._by_reference else b"[" + bytes(self._buf[start:cut]) + b"]"
        return Chunk(self._buf_offset + start - 1, cut - start + 2, self._events, count, data,
                     self._confirm_cuts)

    # -- whitespace: streamed where it is between events or after the document ---------------

    def _content_end(self, start):
        """The index after the buffer's last byte from `start` on that is not whitespace; the
        whitespace found at the buffer's end last time is not scanned again (a run inside an
        event grows block by block up to the size limit)."""
        buf, base = self._buf, self._buf_offset
        content, end = self._scanned
        low = end - base if start <= content - base and end - base <= len(buf) else start
        found = _content_before(buf, low, len(buf))
        if found > low or low == start:
            content = base + found
        self._scanned = (content, base + len(buf))
        return content - base

    def _past_whitespace(self, start):
        """The chunk's start, with whitespace after its stand-in byte buf[start - 1] dropped as
        it streams in (the last whitespace byte then stands in). When a separator is due, a `,`
        becomes the stand-in, and a `]` ends the events."""
        index = self._skip_whitespace(start)
        if index == len(self._buf):
            if index > start:
                self._drop(index - 1)
                return 1
            return start
        if not self._separator_due:
            return start
        self._separator_due = False
        if self._buf[index] == 0x2C:
            self._drop(index)
            return 1
        if self._buf[index] != 0x5D:
            self._fail_after_cuts("malformed JSON: expected ',' or ']'",
                                  self._buf_offset + index)
        return index  # the document's tail: `]` and what follows

    def _boundary_before_whitespace(self, start, content):
        """(cut, events) when the buffer ends in a run of whitespace after whole events: the
        cut is their `,` if there is one, else the run's first byte and the `,` or `]` is due
        after the run; None if the run is not after an event."""
        cut = end = content
        if self._buf[end - 1 : end] == b",":
            cut = end - 1
            end = _content_before(self._buf, start, cut)
        if end <= start or self._buf[end - 1] != 0x7D:
            return None
        try:
            count = self._count_events(start, cut)
        except msgspec.DecodeError:
            return None  # whitespace inside an event or the tail: counted in its size
        self._separator_due = cut == content
        return cut, count

    def _document_ends(self, start, content):
        """Whether the document is whole before the buffer's run of whitespace at `content`."""
        if self._buf[content - 1 : content] not in (b"}", b"]"):
            return False
        try:
            msgspec.json.decode(self._prefix + bytes(self._buf[start:content]),
                                type=list[Raw] if self._prefix is _ARRAY_PREFIX
                                else dict[str, Raw])
        except (msgspec.DecodeError, msgspec.ValidationError):
            return False
        return True

    def _expect_only_whitespace(self):
        """Read the rest of a document that has ended: whitespace, dropped as read."""
        while self._read_block():
            content = self._skip_whitespace(0)
            if content < len(self._buf):
                self._fail_after_cuts("malformed JSON: trailing characters",
                                      self._buf_offset + content)
            self._drop(len(self._buf))

    # -- the document's head: where the events start --------------------------------------

    def _open_document(self):
        """Read up to the first event; return its index in the buffer."""
        while True:
            start = self._skip_whitespace(0)
            if start < len(self._buf):
                break
            self._drop(start)  # whitespace before the document: not kept
            if not self._read_block():
                break
        if start >= len(self._buf):
            self._fail("empty file: no JSON in it")
        first = self._buf[start : start + 1]
        if first == b"[":
            element = self._skip_whitespace(start + 1)
            if self._buf[element : element + 1] == b"[":
                self._fail(f"not a trace: a JSON array of arrays at byte {start}, not of "
                           "events; it looks like a PyTorch memory timeline "
                           "(export_memory_timeline): ingest the trace that "
                           "export_chrome_trace or on_trace_ready writes")
            return start + 1
        if first != b"{":
            self._fail(_not_json(self._path, self._buf[start:start + 16]), 0)
        self._prefix = _OBJECT_PREFIX
        return self._open_object(start)

    def _skip_whitespace(self, index):
        buf = self._buf
        if index == 0 and self._buf_offset == 0 and buf.startswith(b"\xef\xbb\xbf"):
            index = 3
        return _content_after(buf, index)

    def _open_object(self, start):
        search = start
        while True:
            key = self._buf.find(b'"traceEvents"', search)
            if key < 0:
                if len(self._buf) - start > self._max_event_size:
                    self._fail(f"no traceEvents in the first {format_size(self._max_event_size)}"
                               f" of the object, the limit for one value ({HINT} raises it)",
                               self._buf_offset + start, _RAISES_EVENT_SIZE)
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
        """Refuse a repeated top-level key of the document (msgspec keeps the last silently),
        at the byte of its second `"key":` in `text` (which is at file offset `offset`), or of
        `text` where the key is written with escapes."""
        def unique(pairs):
            keys = [key for key, _ in pairs]
            if len(keys) != len(set(keys)):
                repeated = next(k for k in keys if keys.count(k) > 1)
                written = re.escape(json.dumps(repeated, ensure_ascii=False).encode())
                places = [m.start() for m in re.finditer(written + rb"\s*:", bytes(text))]
                self._fail(f"duplicate key {repeated!r} in the trace's top-level object",
                           offset + (places[1] if len(places) > 1 else 0))

        # Values are not needed, only keys: numbers stay text (Python refuses int() of over
        # 4,300 digits, which a hostile trace can hold; msgspec reads the values).
        json.loads(bytes(text), object_pairs_hook=unique, parse_int=str, parse_float=str)

    # -- cutting between events -------------------------------------------------------------

    def _candidate_cuts(self, start):
        """Commas between `}` and `{`, last first."""
        buf = self._buf
        index = len(buf)
        while True:
            index = buf.rfind(b"{", start, index)
            if index <= start:
                return
            comma = _content_before(buf, start, index) - 1
            if comma < start or buf[comma] != 0x2C:
                continue
            brace = _content_before(buf, start, comma) - 1
            if brace >= start and buf[brace] == 0x7D:
                yield comma

    def _last_boundary(self, start):
        """(cut, events before it): the last cut in the buffer that msgspec confirms, or the last
        candidate when cuts go unconfirmed; None if more data is needed."""
        if not self._confirm_cuts:
            cut = next(self._candidate_cuts(start), None)
            return None if cut is None else (cut, count_phase_keys(self._buf, start, cut))
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

    def _close_document(self, start, end=None):
        """The last chunk: the events in buf[start:end] and the document's tail, decoded."""
        data = self._prefix + bytes(self._buf[start:end])
        base = self._buf_offset + start - len(self._prefix)
        try:
            if self._prefix is _ARRAY_PREFIX:
                events = data
            else:
                tail = msgspec.json.decode(data, type=dict[str, Raw])
                events = bytes(tail.pop("traceEvents"))
                if not data.startswith(events, len(self._prefix) - 1):
                    self._repeated_events(data, base)
                after = data[len(self._prefix) - 1 + len(events):]  # what follows the events
                standing_in = b'{"traceEvents":null'  # for the events, the first key
                self._check_unique_keys(standing_in + after, base + len(self._prefix) - 1
                                        + len(events) - len(standing_in))
                self.metadata.update(tail)
            count = len(msgspec.json.decode(events, type=list[Raw]))
        except (msgspec.DecodeError, msgspec.ValidationError) as error:
            position = decode_error_position(error)
            if position is None:
                self._fail("truncated: the JSON ends before the trace is complete")
            self._fail(describe_decode_error(error), base + position)
        self._drop(len(self._buf))
        if count or not self._events:  # an empty chunk only for a trace without events
            yield Chunk(base + len(self._prefix) - 1, len(events), self._events, count, events)
        self._events += count

    def _repeated_events(self, data, base):
        """Fail for the tail `data` (the document from the events' `[`, read as
        _OBJECT_PREFIX, at file offset `base`) whose traceEvents msgspec took is not the one
        read (it keeps the last of a repeated key): name the byte of the next `"traceEvents"`
        after the events' array, or of what follows that array if none is found."""
        start = len(self._prefix) - 1
        try:
            msgspec.json.decode(data[start:], type=list[Raw])
        except msgspec.DecodeError as error:  # "trailing characters": where the array ends
            end = start + (decode_error_position(error) or 0)
            key = data.find(b'"traceEvents"', end)
            self._fail("duplicate key 'traceEvents' in the trace's top-level object",
                       base + (key if key >= 0 else end))
        raise AssertionError("the events' array of a document that decoded cannot be whole")

    @property
    def events(self):
        """Events counted so far (all of them once `chunks()` is exhausted)."""
        return self._events


def _not_json(path, head):
    """What a file that does not start like JSON is, its first bytes shown as text (escaped,
    quoted), never as a Python repr; a `.gz` name without gzip's magic bytes says so."""
    text = json.dumps(bytes(head).decode("utf-8", "backslashreplace"), ensure_ascii=False)
    if str(path).endswith(".gz"):
        return (f"not gzip (the name ends in .gz, but the file does not start with gzip's "
                f"bytes 1f 8b) and not JSON either: it starts with {text}")
    return f"not a JSON trace: it starts with {text}"
