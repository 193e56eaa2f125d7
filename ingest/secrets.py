"""What looks like a secret in a trace, and its redaction.

A public trace in our corpus carries an access token in its metadata, and traces carry command
lines and environment dumps. A secret is recognised by a name that ENDS in a secret word (HF_TOKEN,
WANDB_API_KEY, db_password, accessToken; not TOKENIZERS_PARALLELISM, num_tokens or
per_token_cast kernels):

- the value under such a key (metadata objects, and event fields tracewh does not model);
- `NAME=value`, as in an environment dump or a URL query (`?token=...`; not `tiktoken==0.9`);
- a command-line flag's value, `--hf-token VALUE` or `--password`, `VALUE` as list items
  (`--token=VALUE` is a `NAME=value`);
- a URL's password, `https://user:PASSWORD@host`.

Only the secret is replaced, by `<redacted>`: the name, the flag and the URL stay. A value that
starts with `<` is not taken, so redacting again changes nothing.

Metadata is redacted as decoded values (`redact`). Events are redacted as the chunk's JSON text,
before it is decoded (`redact_json_text`), so every field of every table (names, args, extra)
and what is derived from them (name ids) sees the redacted text. The text patterns are written
once, in the syntax common to Python's `re` and RE2 (Arrow's regex engine): without lookaround,
with ASCII classes. Values stop at a quote or backslash, so a replacement never crosses or
breaks a JSON string. Keys inside event args are not looked at: that needs a regex pass over
every byte of every chunk (0.45 s CPU for the 156 MB of events of a 254 MB trace, ~5% of its
ingest), where the text rules need only scans for a character each requires (`=`, `@`, `--`:
0.08 s), which few chunks of real traces hold.
"""

import re

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

REDACTED = "<redacted>"

# A secret word ends the name. `tokens` is left out on purpose: num_tokens, max_tokens.
_WORD = (r"(?:token|secrets?|passw(?:or)?ds?|passphrase|credentials?|auth|authorization|"
         r"(?:api|private|access|secret)[_-]?keys?)")
# What ends a value: a space, quote, separator, backslash (a JSON escape) or control character.
_STOP = r"\s'\",;&\\\x00-\x1f"
# A value: not empty, not a comparison (==), not already redacted (<redacted>).
_VALUE = r"[^=<" + _STOP + r"][^" + _STOP + r"]*"
_FLAG = r"--[A-Za-z0-9_-]*" + _WORD
_FLAG_VALUE = r"[^=<\-" + _STOP + r"][^" + _STOP + r"]*"  # a value, but not the next flag
# A list item after a flag item: the whole JSON string, unless it is the next flag.
_ITEM = r"[^<\"\\\x00-\x1f-][^\"\\\x00-\x1f]*"

# (pattern, replacement) in order: a URL inside a flag's value is redacted first.
_URL_RULE = (r"(?i)([A-Za-z][A-Za-z0-9+.-]*://[^:@/" + _STOP + r"]*:)"
             r"([^<@/" + _STOP + r"][^@/" + _STOP + r"]*)@", r"\1<redacted>@")
_FLAG_RULE = (r"(?i)(" + _FLAG + r")( +)(" + _FLAG_VALUE + ")", r"\1\2<redacted>")
_ASSIGN_RULE = (r"(?i)\b([A-Za-z0-9_]*" + _WORD + r")=(" + _VALUE + ")", r"\1=<redacted>")
# Flag and value as items of a JSON array (a command line as argv): raw JSON text only.
_FLAG_ITEM_RULE = (r"(?i)(" + _FLAG + r"\",\")(" + _ITEM + r")(\"[,\]])", r"\1<redacted>\3")

TEXT_RULES = (_URL_RULE, _FLAG_RULE, _ASSIGN_RULE)
JSON_TEXT_RULES = (_URL_RULE, _FLAG_ITEM_RULE, _FLAG_RULE, _ASSIGN_RULE)
# Every match of a rule holds one of these; a chunk without them is left as it is.
_ANCHORS = ("=", "@", "--")

_SECRET_KEY = re.compile(r"(?i)" + _WORD + r"\Z", re.ASCII)
_FLAG_AT_END = re.compile(r"(?i)" + _FLAG + r"\Z", re.ASCII)
_WHOLE_ITEM = re.compile(_ITEM + r"\Z", re.ASCII)
_PYTHON_RULES = [(re.compile(pattern, re.ASCII), replacement)
                 for pattern, replacement in TEXT_RULES]
_EMPTY = (None, "", [], {}, REDACTED)
_EMPTY_JSON = (b"null", b'""', b"[]", b"{}", b'"<redacted>"')
_REDACTED_JSON = msgspec.Raw(b'"<redacted>"')


def secret_key(key):
    """Whether values under this key are secrets: its name ends in a secret word."""
    return _SECRET_KEY.search(str(key)) is not None


def redact(value):
    """Return (redacted copy, number of values redacted) of a decoded JSON value. The text
    rules apply to every string, keys included, as they do to the JSON text of events."""
    if isinstance(value, dict):
        out, count = {}, 0
        for key, item in value.items():
            name, found = redact_text(key)
            if secret_key(key) and item not in _EMPTY:
                item, found = REDACTED, found + 1
            else:
                item, inside = redact(item)
                found += inside
            out[name] = item
            count += found
        return out, count
    if isinstance(value, list):
        return _redact_list(value)
    if isinstance(value, str):
        return redact_text(value)
    return value, 0


def _redact_list(items):
    """Items redacted one by one, and the item after a flag item (["--token", "hf_..."]),
    unless that flag item was itself taken as a flag's value."""
    out, count, taken = [], 0, False
    for index, item in enumerate(items):
        previous = items[index - 1] if index else None
        if (not taken and isinstance(previous, str) and isinstance(item, str)
                and _FLAG_AT_END.search(previous) and _WHOLE_ITEM.match(item)):
            out.append(REDACTED)
            count += 1
            taken = True
            continue
        taken = False
        item, found = redact(item)
        out.append(item)
        count += found
    return out, count


def redact_text(text):
    """Return (text with its secrets redacted, number redacted)."""
    count = 0
    for pattern, replacement in _PYTHON_RULES:
        text, found = pattern.subn(replacement, text)
        count += found
    return text, count


def redact_json_text(data):
    """Return (JSON text with the secrets inside its strings redacted, number redacted).

    `data` is UTF-8 JSON bytes (a chunk of events). Each rule is counted and applied by RE2
    over the whole text at once; a text without any of the anchors, most chunks of most
    traces, costs three scans at memchr speed."""
    column = _as_column(data)
    if not any(pc.match_substring_regex(column, anchor)[0].as_py() for anchor in _ANCHORS):
        return data, 0
    count = 0
    for pattern, replacement in JSON_TEXT_RULES:
        found = pc.count_substring_regex(column, pattern)[0].as_py()
        if found:
            column = pc.replace_substring_regex(column, pattern, replacement)
            count += found
    return (column[0].as_py() if count else data), count


def _as_column(data):
    """A one-value binary array over `data`, without copying it (RE2 then reads it as
    Latin-1: byte by byte, which is exact for these ASCII patterns over UTF-8)."""
    offsets = pa.array([0, len(data)], pa.int32()).buffers()[1]
    return pa.Array.from_buffers(pa.binary(), 1, [None, offsets, pa.py_buffer(data)])


def redact_fields(fields):
    """Redact, in place, the values of a {key: value or msgspec.Raw} mapping (an event's
    fields tracewh does not model) whose key looks like a secret; return how many."""
    count = 0
    for key, value in fields.items():
        if not secret_key(key):
            continue
        empty = (bytes(value) in _EMPTY_JSON if isinstance(value, msgspec.Raw)
                 else value in _EMPTY)
        if not empty:
            fields[key] = _REDACTED_JSON
            count += 1
    return count
