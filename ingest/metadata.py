"""A trace's top-level metadata: the `traces` row, the `devices` rows, and secret redaction.

Everything in the document but `traceEvents` is metadata (schemaVersion, deviceProperties,
distributedInfo, versions, INFO logs, environment dumps...). Values under keys that look like
secrets, and `NAME=value` pairs in strings whose NAME looks like one, are redacted unless the user
opts out: a public trace in our corpus carries an access token in its metadata.
"""

import json
import re

import msgspec

SECRET_KEY = re.compile(r"token|secret|passw(or)?d|api[_-]?key|credential|private[_-]?key|"
                        r"access[_-]?key|auth", re.IGNORECASE)
_SECRET_ASSIGNMENT = re.compile(
    r"\b([A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|CREDENTIAL|ACCESS_KEY)"
    r"[A-Za-z0-9_]*)=([^\s'\",;]+)", re.IGNORECASE)
REDACTED = "<redacted>"

VERSION_KEYS = ("cupti_version", "cuda_runtime_version", "cuda_driver_version",
                "roctracer_version", "hip_runtime_version")


def decode_metadata(raw_metadata):
    """Raw top-level values as Python values (integers exact, floats as floats: metadata holds
    versions and settings, no timestamps but baseTimeNanoseconds, an integer)."""
    return {key: msgspec.json.decode(raw) for key, raw in raw_metadata.items()}


def redact(value):
    """Return (redacted copy, number of values redacted)."""
    if isinstance(value, dict):
        out, count = {}, 0
        for key, item in value.items():
            if SECRET_KEY.search(str(key)) and item not in (None, "", [], {}):
                out[key] = REDACTED
                count += 1
            else:
                out[key], found = redact(item)
                count += found
        return out, count
    if isinstance(value, list):
        items = [redact(item) for item in value]
        return [item for item, _ in items], sum(found for _, found in items)
    if isinstance(value, str):
        text, found = _SECRET_ASSIGNMENT.subn(lambda m: f"{m.group(1)}={REDACTED}", value)
        return text, found
    return value, 0


def _text(value):
    return None if value is None else str(value)


def _int(value):
    try:
        return int(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def trace_row(metadata, *, trace_id, sha256, source_path, size, events, world_size, tags,
              warnings, secrets_redacted):
    """The `traces` row (without ingested_at and ingest_seq, known at commit)."""
    distributed = metadata.get("distributedInfo") or {}
    if not isinstance(distributed, dict):
        distributed = {}
    devices = metadata.get("deviceProperties") or []
    names = sorted({str(d.get("name")) for d in devices if isinstance(d, dict) and d.get("name")})
    known = {"schemaVersion", "baseTimeNanoseconds", "traceName", *VERSION_KEYS}
    row = {
        "trace_id": trace_id,
        "sha256": sha256,
        "source_path": source_path,
        "bytes": size,
        "events": events,
        "world_size": world_size,
        "device_names": names,
        "schema_version": _text(metadata.get("schemaVersion")),
        "base_time_ns": _int(metadata.get("baseTimeNanoseconds")),
        "trace_name": _text(metadata.get("traceName")),
        "nccl_version": _text(distributed.get("nccl_version")),
        "backend": _text(distributed.get("backend")),
        "tags": json.dumps(tags, sort_keys=True),
        "warnings": warnings,
        "secrets_redacted": secrets_redacted,
        "metadata": json.dumps({k: v for k, v in metadata.items() if k not in known},
                               default=str),
    }
    for key in VERSION_KEYS:
        row[key] = _text(metadata.get(key))
    return row


def device_rows(metadata, trace_id):
    rows = []
    for index, device in enumerate(metadata.get("deviceProperties") or []):
        if not isinstance(device, dict):
            continue
        rows.append({
            "trace_id": trace_id,
            "device": _int(device.get("id", index)),
            "name": _text(device.get("name")),
            "total_global_mem": _int(device.get("totalGlobalMem")),
            "compute_major": _int(device.get("computeMajor")),
            "compute_minor": _int(device.get("computeMinor")),
            "num_sms": _int(device.get("numSms")),
            "properties": json.dumps(device, default=str),
        })
    return rows


def base_time_ns(metadata):
    return _int(metadata.get("baseTimeNanoseconds")) or 0
