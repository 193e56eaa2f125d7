"""What looks like a secret in a trace, and its redaction.

A public trace in our corpus carries an access token in its metadata, and traces carry command
lines and environment dumps. A secret is recognised by a name that ENDS in a secret word (HF_TOKEN,
WANDB_API_KEY, db_password, accessToken; not TOKENIZERS_PARALLELISM, num_tokens or
per_token_cast kernels):

- the value under such a key (metadata objects, and event fields tracewh does not model);
- `NAME=value`, as in an environment dump or a URL query (`?token=...`; not `tiktoken==0.9`),
  also spaced and quoted: `HF_TOKEN = x`, `HF_TOKEN='x'`, `HF_TOKEN="x"`;
- `NAME: value`, quoted or not: a Python repr `{'HF_TOKEN': 'x'}`, JSON inside a string
  `{"api_key": "x"}`, `db_password: 'x'`, `db_password: x`, `GITHUB_TOKEN:x` (not a C++ scope
  `auth::x`);
- an HTTP credential after its scheme: `Authorization: Bearer x`, `Basic x`;
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
ingest), where the text rules need only scans for text each requires (`=`, `@`, `--`, a quote
beside a colon, a scheme word: `_ANCHORS`, literal text found at memchr speed), which few
chunks of real traces hold. An unquoted `NAME: value` has no such literal (most chunks hold a
colon in a string, `evaluate_function: MulBackward0`): its anchor is a secret word before a
colon, one case-insensitive RE2 scan (~1.8 ms per MB of events, ~0.3 s CPU for the 254 MB
trace), paid for correctness.
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
# A value after a colon: nor a C++ scope (`::`).
_COLON_VALUE = r"[^:<" + _STOP + r"][^" + _STOP + r"]*"
_FLAG = r"--[A-Za-z0-9_-]*" + _WORD
_FLAG_VALUE = r"[^=<\-" + _STOP + r"][^" + _STOP + r"]*"  # a value, but not the next flag
# A list item after a flag item: the whole JSON string, unless it is the next flag.
_ITEM = r"[^<\"\\\x00-\x1f-][^\"\\\x00-\x1f]*"

# A secret's name and what separates it from its value: `=` or `:`, spaces around it, the name
# and the value in quotes (`HF_TOKEN = x`, `HF_TOKEN='x'`, `{'HF_TOKEN': 'x'}`). `quote` is `"` in
# decoded text and `\"` in JSON text, where a quote inside a string is escaped.
_NAME = r"\b([A-Za-z0-9_]*" + _WORD


def _assign_rule(quote):
    """`NAME=value`, spaced and quoted: the value after `=` (not a comparison, `==`)."""
    opening = r"(?:'|" + quote + ")?"
    return (r"(?i)" + _NAME + opening + r" *= *" + opening + ")(" + _VALUE + ")",
            r"\1<redacted>")


def _quoted_colon_rule(quote):
    """`NAME: value` where a quote touches the colon (`'NAME': 'x'`, `"NAME": "x"` in a string,
    `NAME: 'x'`): the only colon forms found in event text (see the module's docstring)."""
    either = r"(?:'|" + quote + ")"
    return (r"(?i)" + _NAME + r"(?:" + either + r" *: *" + either + r"?|: *" + either + "))("
            + _COLON_VALUE + ")", r"\1<redacted>")


# (pattern, replacement) in order: a URL inside a flag's value is redacted first.
_URL_RULE = (r"(?i)([A-Za-z][A-Za-z0-9+.-]*://[^:@/" + _STOP + r"]*:)"
             r"([^<@/" + _STOP + r"][^@/" + _STOP + r"]*)@", r"\1<redacted>@")
_FLAG_RULE = (r"(?i)(" + _FLAG + r")( +)(" + _FLAG_VALUE + ")", r"\1\2<redacted>")
# An HTTP credential, `Authorization: Bearer x`, wherever its scheme word is.
_BEARER_RULE = (r"(?i)\b((?:bearer|basic) +)(" + _VALUE + ")", r"\1<redacted>")
# `NAME: value` and `NAME:value` without quotes: decoded text (metadata) only.
# Before _BEARER_RULE, which then finds its value taken: a scheme word is not the value.
_COLON_RULE = (r"(?i)" + _NAME + r" *: *(?:(?:bearer|basic) +)?)(" + _COLON_VALUE + ")",
               r"\1<redacted>")
# Flag and value as items of a JSON array (a command line as argv): raw JSON text only.
_FLAG_ITEM_RULE = (r"(?i)(" + _FLAG + r"\",\")(" + _ITEM + r")(\"[,\]])", r"\1<redacted>\3")

# The rules as decoded text (metadata) and as JSON text (events): the same matches. The unquoted
# colon rule's value stops at a quote or backslash as every value does, so in JSON text it never
# reaches past its string.
TEXT_RULES = (_URL_RULE, _FLAG_RULE, _COLON_RULE, _BEARER_RULE, _assign_rule('"'),
              _quoted_colon_rule('"'))
JSON_TEXT_RULES = (_URL_RULE, _FLAG_ITEM_RULE, _FLAG_RULE, _COLON_RULE, _BEARER_RULE,
                   _assign_rule(r'\\"'), _quoted_colon_rule(r'\\"'))
# Every match of a rule of JSON_TEXT_RULES holds one of these literal texts, or a secret word
# before a colon (`_COLON_ANCHOR`); a chunk without any is left as it is. Each literal costs
# one scan at memchr speed; a colon alone is no anchor, as most chunks hold one
# (`autograd::engine::evaluate_function: MulBackward0`).
_LITERAL_ANCHORS = ("=", "@", "--", "':", '\\":', ": '", ': \\"', "earer ", "EARER ", "asic ",
                    "ASIC ")
_ANCHORS = tuple(re.escape(text) for text in _LITERAL_ANCHORS) + (
    r"(?i)" + _WORD + r" *:",)

_SECRET_KEY = re.compile(r"(?i)" + _WORD + r"\Z", re.ASCII)
_FLAG_AT_END = re.compile(r"(?i)" + _FLAG + r"\Z", re.ASCII)
_WHOLE_ITEM = re.compile(_ITEM + r"\Z", re.ASCII)


def _compiled(rules):
    return [(re.compile(pattern, re.ASCII), replacement) for pattern, replacement in rules]


_PYTHON_RULES = _compiled(TEXT_RULES)
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


def redact_json_text(data, has_anchor=None):
    """Return (JSON text with the secrets inside its strings redacted, number redacted).

    `data` is UTF-8 JSON bytes (a chunk of events). Each rule is counted and applied by RE2
    over the whole text at once; a text without any of the anchors, most chunks of most
    traces, is left as it is. `has_anchor(data)` tests for them in one pass (the native
    core's); without it, `has_anchor_reference` does, by RE2 in one scan per anchor."""
    column = _as_column(data)
    if not (has_anchor or has_anchor_reference)(data):
        return data, 0
    count = 0
    for pattern, replacement in JSON_TEXT_RULES:
        found = pc.count_substring_regex(column, pattern)[0].as_py()
        if found:
            column = pc.replace_substring_regex(column, pattern, replacement)
            count += found
    return (column[0].as_py() if count else data), count


def has_anchor_reference(data):
    """Whether the JSON text `data` holds an anchor of `_ANCHORS`: RE2 scans, one each."""
    column = _as_column(data)
    return any(pc.match_substring_regex(column, anchor)[0].as_py() for anchor in _ANCHORS)


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
