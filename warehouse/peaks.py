"""Device peaks: the hardware ceilings op_perf measures calls against, kept as data.

`sql/device_peaks.toml` (the defaults) holds one `[[device]]` per GPU product: a display
`name`, a `pattern` (a regular expression on the lower-cased device name of the trace's
`devices` rows), `memory_tbs` (TB/s), `tflops` (an inline table of dense peak TFLOPS per
input data type) and the `source` of the figures. Devices are tried in order and the first
whose pattern matches wins; a user's file (`--peaks FILE`) comes before the defaults, so it
adds devices or overrides them. A file is checked whole when read, with the kernel rules'
checks (`rules.py`): one error line naming the file and the device, never a device silently
ignored or a pattern only Spark refuses.
"""

import functools
import importlib.resources
import math

from .errors import UsageError
from .rules import check_keys, check_pattern, insert_rows, read_tables

KEYS = ("name", "pattern", "memory_tbs", "tflops", "source")
DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")
# The table op_perf reads: one row per device and data type, in the order devices are tried.
COLUMNS = (("priority", "INTEGER"), ("device", "VARCHAR"), ("pattern", "VARCHAR"),
           ("dtype", "VARCHAR"), ("peak_tflops", "DOUBLE"), ("memory_tbs", "DOUBLE"),
           ("source", "VARCHAR"))
PEAKS_TABLE = ("CREATE OR REPLACE TABLE device_peaks ("
               + ", ".join(f"{name} {type_}" for name, type_ in COLUMNS) + ")")


def load_peaks(path=None, text=None):
    """[(device, pattern, dtype, peak_tflops, memory_tbs, source)] from a TOML file (or
    text), checked."""
    label = str(path) if path else "device peaks"
    document = read_tables(label, "device peaks", path, text, ("device",))
    return [row for index, device in enumerate(document.get("device", []))
            for row in _device_rows(f"{label}: [[device]] #{index + 1}", device)]


def _device_rows(where, device):
    """The rows of one [[device]] table, one per data type, checked."""
    check_keys(where, device, KEYS)
    for key in ("name", "pattern", "source"):
        if not isinstance(device.get(key), str) or not device[key]:
            raise UsageError(f"{where}: needs a non-empty string {key!r}")
    check_pattern(where, device["pattern"])
    memory = _positive(where, "memory_tbs", device.get("memory_tbs"))
    tflops = device.get("tflops")
    if not isinstance(tflops, dict) or not tflops:
        raise UsageError(f"{where}: needs 'tflops', a table of peak TFLOPS per data type "
                         f"({', '.join(DTYPES)}), e.g. tflops = {{ bf16 = 989.5 }}")
    check_keys(f"{where}: tflops", tflops, DTYPES)
    return [(device["name"], device["pattern"], dtype,
             _positive(where, f"tflops.{dtype}", value), memory, device["source"])
            for dtype, value in tflops.items()]


def _positive(where, key, value):
    """`value` as a float when it is a finite number above 0 (TOML bools are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value <= 0:
        raise UsageError(f"{where}: {key!r} must be a number above 0, not {value!r}")
    return float(value)


@functools.cache
def _default_peaks():
    """The shipped peaks, read and checked once per process."""
    text = importlib.resources.files("tracewh.sql").joinpath("device_peaks.toml").read_text()
    return tuple(load_peaks(text=text))


def default_peaks():
    return list(_default_peaks())


def effective_peaks(peaks_file=None):
    """The user's devices (--peaks) first, then the defaults."""
    return (load_peaks(peaks_file) if peaks_file is not None else []) + default_peaks()


def peaks_rows(peaks):
    """The rows of table device_peaks: (priority, device, pattern, dtype, peak_tflops,
    memory_tbs, source)."""
    return [(index, *peak) for index, peak in enumerate(peaks)]


def create_peaks_table(connection, peaks):
    connection.execute(PEAKS_TABLE)
    insert_rows(connection, "device_peaks", peaks_rows(peaks))
