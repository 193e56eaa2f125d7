"""A trace's top-level metadata: the `traces` row and the `devices` rows.

Everything in the document but `traceEvents` is metadata (schemaVersion, deviceProperties,
distributedInfo, versions, INFO logs, environment dumps...); its secrets are redacted before
the row is built (see `secrets`).
"""

import json

import msgspec

from tracewh.storage.schema import VERSION_KEYS



def decode_metadata(raw_metadata):
    """Raw top-level values as Python values (integers exact, floats as floats: metadata holds
    versions and settings, no timestamps but baseTimeNanoseconds, an integer). A value holding
    an integer msgspec cannot hold (past 64 bits) is kept as its JSON text, a string."""
    return {key: _decoded(raw) for key, raw in raw_metadata.items()}


def _decoded(raw):
    try:
        return msgspec.json.decode(raw)
    except msgspec.ValidationError:  # "Integer value out of range"
        return bytes(raw).decode()


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
