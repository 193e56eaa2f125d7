"""Secrets are redacted everywhere a trace holds text: metadata, and every field of every event
(args, names, fields no table models), in every table; counted exactly; nothing else changes."""

import gzip
import json

import msgspec
import pyarrow.compute
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracewh.ingest import reader
from tracewh.ingest.normalize import name_id
from tracewh.ingest.decoder import _decode, native_available
from tracewh.ingest.secrets import has_anchor_reference, redact, redact_json_text, secret_key

from .conftest import SHARED, live_files, require, shared
from .reference import EVENT_TABLES

# Each secret below is one redaction; the trace's events hold one of each place the issue names.
METADATA = {
    "cmdline": "python train.py --password pw_cmdline --lr 0.1",
    "argv": ["train.py", "--hf-token", "tok_argv", "--verbose"],
    "repository": "https://ci:pw_url@git.example.com/model.git",
    "environment": {"HF_TOKEN": "hf_meta", "TOKENIZERS_PARALLELISM": "false", "PATH": "/bin"},
    "packages": ["tiktoken==0.9.0", "asttokens==3.0.0"],
}
EVENTS = [
    {"ph": "M", "name": "process_name", "pid": 1, "tid": 0,
     "args": {"name": "HF_TOKEN=hf_process python"}},
    {"ph": "X", "cat": "kernel", "name": "topk_tokens_kernel", "pid": 0, "tid": 7, "ts": 10,
     "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1,
                        "note": "WANDB_API_KEY=wandb_kernel"}},
    {"ph": "X", "cat": "kernel", "name": "launch --auth-token tok_name", "pid": 0, "tid": 7,
     "ts": 20, "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 2}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 8, "dur": 9,
     "args": {"External id": 3, "Concrete Inputs": ["--api-key", "key_cpu_op", ""]}},
    {"ph": "i", "name": "note", "pid": 1, "tid": 1, "ts": 12, "s": "t",
     "args": {"message": "DB_PASSWORD=pw_instant"}},
    {"ph": "R", "name": "fetch https://u:pw_other@host/x", "pid": 1, "tid": 1, "ts": 13},
    {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 30, "dur": 2,
     "auth_token": "tok_extra", "launcher": "run --secret sec_extra", "args": {}},
]
SECRETS = ["pw_cmdline", "tok_argv", "pw_url", "hf_meta", "hf_process", "wandb_kernel",
           "tok_name", "key_cpu_op", "pw_instant", "pw_other", "tok_extra", "sec_extra"]
IN_METADATA = 4


def write_trace(path):
    path.write_text(json.dumps({"schemaVersion": 1, **METADATA, "traceEvents": EVENTS}))
    return path


def all_rows(warehouse):
    """Every stored row of every event table (read from the live Parquet files: quicker
    than a query per table)."""
    rows = {table: [] for table in EVENT_TABLES}
    for path in live_files(warehouse):
        table = path.relative_to(warehouse).parts[0]
        if table in rows:
            rows[table] += pq.read_table(path).to_pylist()
    return rows


def test_secrets_are_redacted_in_every_table_and_counted(tracewh, sql, warehouse, tmp_path):
    tracewh("ingest", write_trace(tmp_path / "secret.json"), "--run", "s")
    (trace,) = sql("SELECT metadata, secrets_redacted FROM traces")
    assert trace["secrets_redacted"] == len(SECRETS)
    rows = all_rows(warehouse)
    stored = json.dumps([trace, rows], default=str)
    assert [secret for secret in SECRETS if secret in stored] == []
    assert stored.count("<redacted>") == len(SECRETS)
    metadata = json.loads(trace["metadata"])
    assert metadata["cmdline"] == "python train.py --password <redacted> --lr 0.1"
    assert metadata["argv"] == ["train.py", "--hf-token", "<redacted>", "--verbose"]
    assert metadata["repository"] == "https://ci:<redacted>@git.example.com/model.git"
    assert metadata["environment"] == {"HF_TOKEN": "<redacted>",
                                       "TOKENIZERS_PARALLELISM": "false", "PATH": "/bin"}
    assert metadata["packages"] == METADATA["packages"]
    (process,) = rows["metadata"]
    assert json.loads(process["args"]) == {"name": "HF_TOKEN=<redacted> python"}
    first, second = sorted(rows["kernels"], key=lambda row: row["ts_ns"])
    assert first["name"] == "topk_tokens_kernel"
    assert json.loads(first["args"])["note"] == "WANDB_API_KEY=<redacted>"
    assert second["name"] == "launch --auth-token <redacted>"
    assert second["name_id"] == name_id(second["name"])  # ids follow the redacted name
    mm, add = sorted(rows["cpu_ops"], key=lambda row: row["ts_ns"])
    assert json.loads(mm["args"])["Concrete Inputs"] == ["--api-key", "<redacted>", ""]
    assert mm["external_id"] == 3  # the columns decoded from args are intact
    assert json.loads(add["extra"]) == {"auth_token": "<redacted>",
                                        "launcher": "run --secret <redacted>"}
    (instant,) = rows["instants"]
    assert json.loads(instant["args"]) == {"message": "DB_PASSWORD=<redacted>"}
    (other,) = rows["other_events"]
    assert other["name"] == "fetch https://u:<redacted>@host/x"


# Each form of a secret's value (issue 42), {} standing for the secret.
FORMS = ["HF_TOKEN='{}'", 'HF_TOKEN="{}"', 'python run.py HF_TOKEN="{}" --lr 0.1',
         "{{'HF_TOKEN': '{}'}}", "HF_TOKEN = {}", "Authorization: Bearer {}",
         '{{"api_key": "{}"}}', "db_password: '{}'", "db_password: {}", "GITHUB_TOKEN:{}",
         "Authorization: Basic {}"]
NOT_SECRETS = ["TOKENIZERS_PARALLELISM=false", "num_tokens: 4096", "tiktoken==0.9.0",
               "tiktoken == 0.9.0", "autograd::engine::evaluate_function: MulBackward0",
               "c10::auth::token::x", "nccl:all_reduce"]


def stored_strings(warehouse):
    """Every string value of every Parquet file of the warehouse, decompressed by pyarrow."""
    values = []
    for path in warehouse.rglob("*.parquet"):
        table = pq.read_table(path)
        for column in table.itercolumns():
            values += [str(v) for v in column.to_pylist() if v is not None]
    return "\n".join(values)


def test_every_form_of_a_secret_is_redacted_everywhere(tracewh, warehouse, tmp_path):
    """Each form in an event's args and name and in the metadata (a key of its own and the
    cmdline): no secret value in any string of any file; the look-alikes stay as they are."""
    secret = iter(f"s3cr3t{number:02d}" for number in range(100))
    events, metadata, expected = [], {}, []
    for number, form in enumerate(FORMS):
        places = ["metadata", "cmdline", "args", "name"]
        for place in places:
            value = form.format(next(secret))
            expected.append(value.split("{")[-1])
            if place == "metadata":
                metadata[f"note{number}"] = value
            elif place == "cmdline":
                metadata["cmdline"] = f"{metadata.get('cmdline', 'train.py')} {value}"
            else:
                events.append({"ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1,
                               "ts": len(events), "dur": 1,
                               "name": value if place == "name" else "aten::mm",
                               "args": {"note": value if place == "args" else "x"}})
    events.append({"ph": "X", "cat": "cpu_op", "name": " ".join(NOT_SECRETS), "pid": 1,
                   "tid": 1, "ts": 99, "dur": 1, "args": {"safe": NOT_SECRETS}})
    path = tmp_path / "forms.json"
    path.write_text(json.dumps({"schemaVersion": 1, **metadata, "safe": NOT_SECRETS,
                                "traceEvents": events}))
    tracewh("ingest", path, "--run", "forms")
    stored = stored_strings(warehouse)
    assert "s3cr3t" not in stored
    assert stored.count("<redacted>") >= len(expected)
    assert all(text in stored for text in NOT_SECRETS)


def test_keep_secrets_keeps_them(tracewh, sql, warehouse, tmp_path):
    tracewh("ingest", write_trace(tmp_path / "secret.json"), "--run", "k", "--keep-secrets")
    (trace,) = sql("SELECT metadata, secrets_redacted FROM traces")
    assert trace["secrets_redacted"] == 0
    stored = json.dumps([trace, all_rows(warehouse)], default=str)
    assert [secret for secret in SECRETS if secret not in stored] == []
    assert "<redacted>" not in stored


def test_secrets_of_every_chunk_are_counted(tracewh, sql, tmp_path, monkeypatch):
    """A trace cut into many chunks: each chunk's redactions add up in the traces row."""
    monkeypatch.setattr(reader, "BLOCK_SIZE", 1 << 10)
    monkeypatch.setattr(reader, "FIRST_BLOCK_SIZE", 1 << 10)
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i,
               "dur": 1, "args": {"cmd": f"GH_TOKEN=ghp_{i} run"}} for i in range(200)]
    path = tmp_path / "many.json"
    path.write_text(json.dumps({"traceEvents": events}))
    tracewh("ingest", path, "--run", "m", "--jobs", "1")
    assert sql("SELECT secrets_redacted FROM traces") == [{"secrets_redacted": 200}]
    args = {row["args"] for row in sql("SELECT args FROM cpu_ops")}
    assert args == {'{"cmd":"GH_TOKEN=<redacted> run"}'}


def test_the_public_trace_with_a_token_keeps_all_else(tracewh, sql):
    """The Falconsai trace's environment dump holds a real HF_TOKEN: that value alone goes;
    TOKENIZERS_PARALLELISM and pinned packages such as tiktoken==0.9.0 stay."""
    path = shared("tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz")
    tracewh("ingest", path, "--run", "f")
    (trace,) = sql("SELECT metadata, secrets_redacted FROM traces")
    assert trace["secrets_redacted"] == 1
    system = json.loads(trace["metadata"])["metadata"]["system"]
    original = json.loads(gzip.decompress(path.read_bytes()))["metadata"]["system"]
    assert system["env"] == {**original["env"], "HF_TOKEN": "<redacted>"}
    assert system["pip_packages"] == original["pip_packages"]


REAL_TRACES = sorted(SHARED.glob("**/*.json*"))
# The only secret of the corpus: the HF_TOKEN of the Falconsai runs' environment dumps.
REAL_SECRETS = {"tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz": 1,
                "tracelens/mi300/Falconsai_nsfw_image_detection__1016002.json.gz": 1}


@pytest.mark.parametrize("path", REAL_TRACES, ids=lambda p: str(p.relative_to(SHARED)))
def test_real_traces_change_only_where_a_secret_is(path):
    """No kernel, op or python_function name, arg or metadata value of the corpus is taken for
    a secret (per_token_cast kernels, num_tokens, tiktoken==0.9.0, tcp://host:port)."""
    raw = require(path).read_bytes()
    document = msgspec.json.decode(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw,
                                   type=dict[str, msgspec.Raw] | list[msgspec.Raw])
    if isinstance(document, list):
        document = {"traceEvents": msgspec.json.encode(document)}
    events = msgspec.json.format(document.pop("traceEvents"), indent=-1)
    assert redact_json_text(events) == (events, 0)
    metadata = {key: msgspec.json.decode(value) for key, value in document.items()}
    _, found = redact(metadata)
    assert found == REAL_SECRETS.get(str(path.relative_to(SHARED)), 0)


# -- properties of the JSON text redaction --------------------------------------------------

FRAGMENTS = ["HF_TOKEN", "api_key", "Password", "token", "tokens", "--", "--token", "=", "==",
             " ", "  ", "https://", "u:", "p@h", ":", "@", "/", '"', "\\", "\n", "\x01", ",",
             "é", "-", "<redacted>", "x", "12", "&", "?"]
TEXT = st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join)
SAFE_KEY = TEXT.filter(lambda key: not secret_key(key))
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(SAFE_KEY, inner, max_size=5),
    max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(VALUES)
def test_json_text_redaction_is_the_decoded_redaction(value):
    """Redacting the JSON text (RE2, as events are) gives valid JSON equal to redacting the
    decoded value (Python's re, as metadata is), with the same count: nothing outside a secret
    changes, whatever the escapes; and a second pass finds nothing."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    redacted, count = redact_json_text(text)
    expected, expected_count = redact(value)
    assert json.loads(redacted) == expected
    assert count == expected_count
    assert (redacted == text) == (count == 0)
    assert redact_json_text(redacted) == (redacted, 0)


def test_a_chunk_without_an_anchor_is_not_scanned_by_the_rules(monkeypatch):
    """The anchors are literal text: `\\":` is an escaped quote before a colon, not every JSON
    key's `":` (read as a regex, it sent every chunk of every trace through all the rules)."""
    scans = []
    count = pyarrow.compute.count_substring_regex
    monkeypatch.setattr(pyarrow.compute, "count_substring_regex",
                        lambda *args, **kwargs: scans.append(args) or count(*args, **kwargs))
    chunk = (b'[{"ph": "X", "name": "aten::mm", "args": {"Input Dims": [[2, 3]], '
             b'"note": "autograd::engine::evaluate_function: MulBackward0"}}]')
    assert redact_json_text(chunk) == (chunk, 0)
    assert scans == []


ANCHOR_FRAGMENTS = ["token", "TOKEN", "tokens", "Secrets", "passWD", "passwords", "passphrase",
                    "credential", "AUTH", "authorization", "api", "Private", "access", "key",
                    "KEYS", "_", "-", " ", ":", "'", '\\"', "=", "@", "Bearer ", "earer ",
                    "ASIC ", "basic ", "x", "é", "ſ", "K"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(ANCHOR_FRAGMENTS), max_size=10).map("".join))
def test_native_anchor_test_is_the_re2_scans(text):
    """The native core's one-pass test for the secret rules' anchors answers as RE2's scans,
    one per anchor, do: a chunk it passes over is one no rule could match."""
    if not native_available():
        pytest.skip("the native core is not built")
    data = text.encode()
    assert _decode.has_secret_anchor(data) == has_anchor_reference(data)
