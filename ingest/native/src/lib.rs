//! tracewh's native decode core, `tracewh.ingest._decode`: the one loop that touches every
//! byte of a trace's events, in Rust. `decode_events(data)` reads a JSON array of events with
//! the GIL released and returns their columns as Arrow buffers (see `decode`), or None when
//! the chunk holds something only the Python reference decoder reproduces exactly.
//! `best_edges` is the one loop of the critical path measured at ingest (see `graph`), and
//! `has_secret_anchor` the test of a chunk for what a secret rule could match (`anchors`).

mod anchors;
mod columns;
mod decode;
mod graph;
mod json;
mod numbers;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use columns::{Column, StrColumn, Validity};
use decode::{Events, DIMENSION_ARGS, FLOAT_ARGS, INT_ARGS};

/// The bytes of a slice of plain numbers (i32, i64, f64), as Arrow lays them out.
fn raw_bytes<T: Copy>(values: &[T]) -> &[u8] {
    // SAFETY: integers and floats have no padding and every byte pattern is valid u8.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

fn validity<'py>(py: Python<'py>, validity: &Validity) -> Option<Bound<'py, PyBytes>> {
    (validity.nulls > 0).then(|| PyBytes::new(py, &validity.bits))
}

/// (validity or None, offsets, data) of a string column.
fn strings<'py>(py: Python<'py>, column: &StrColumn) -> PyResult<Bound<'py, PyAny>> {
    let buffers = (
        validity(py, &column.validity),
        PyBytes::new(py, raw_bytes(&column.offsets)),
        PyBytes::new(py, &column.data),
    );
    buffers.into_pyobject(py).map(|t| t.into_any())
}

/// (validity or None, values) of a fixed-width column.
fn values<'py, T: Copy>(py: Python<'py>, column: &Column<T>) -> PyResult<Bound<'py, PyAny>> {
    let buffers = (
        validity(py, &column.validity),
        PyBytes::new(py, raw_bytes(&column.values)),
    );
    buffers.into_pyobject(py).map(|t| t.into_any())
}

fn to_dict<'py>(py: Python<'py>, events: &Events) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("events", events.count)?;
    for (key, column) in ["ph", "cat", "name", "bp", "s"].iter().zip(&events.text) {
        out.set_item(key, strings(py, column)?)?;
    }
    for (key, column) in ["pid", "tid", "id"].iter().zip(&events.ids) {
        out.set_item(key, strings(py, column)?)?;
    }
    for (key, column) in ["pid_number", "tid_number"].iter().zip(&events.id_numbers) {
        out.set_item(key, values(py, column)?)?;
    }
    out.set_item("ts_ns", values(py, &events.ts_ns)?)?;
    out.set_item("dur_ns", values(py, &events.dur_ns)?)?;
    out.set_item("args", strings(py, &events.args)?)?;
    for ((key, _, _), column) in INT_ARGS.iter().zip(&events.int_args) {
        out.set_item(key, values(py, column)?)?;
    }
    for (key, column) in FLOAT_ARGS.iter().zip(&events.float_args) {
        out.set_item(key, values(py, column)?)?;
    }
    for (key, columns) in DIMENSION_ARGS.iter().zip(&events.dimensions) {
        for (axis, column) in ["x", "y", "z"].iter().zip(columns) {
            out.set_item(format!("{key}_{axis}"), values(py, column)?)?;
        }
    }
    Ok(out)
}

/// Decode a JSON array of trace events (bytes) into a dict of column buffers, or None when
/// the Python reference must decode it (see `decode`).
#[pyfunction]
fn decode_events<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let bytes = data.as_bytes();
    match py.allow_threads(|| decode::decode(bytes)) {
        Ok(events) => to_dict(py, &events).map(Some),
        Err(json::Unsupported) => Ok(None),
    }
}

/// The native-endian i64 values of `data` (a numpy int64 array's bytes).
fn int64s(data: &[u8]) -> Vec<i64> {
    data.chunks_exact(8)
        .map(|b| i64::from_ne_bytes(b.try_into().unwrap_or_default()))
        .collect()
}

/// (each node's best incoming edge as int64 bytes, -1 for none; the end node of a longest
/// path) of the graph of `size` nodes and edges src -> dst of weight (each int64 bytes), as
/// ingest/critical_path.py's `_best_edges_reference`.
#[pyfunction]
fn best_edges<'py>(
    py: Python<'py>,
    size: usize,
    src: &Bound<'py, PyBytes>,
    dst: &Bound<'py, PyBytes>,
    weight: &Bound<'py, PyBytes>,
) -> PyResult<(Bound<'py, PyBytes>, i64)> {
    let (src, dst, weight) = (src.as_bytes(), dst.as_bytes(), weight.as_bytes());
    let found =
        py.allow_threads(|| graph::best_edges(size, &int64s(src), &int64s(dst), &int64s(weight)));
    match found {
        Some((via, end)) => Ok((PyBytes::new(py, raw_bytes(&via)), end)),
        None => Err(pyo3::exceptions::PyValueError::new_err(
            "an edge names no node of the graph",
        )),
    }
}

/// Whether the JSON text `data` holds an anchor of a secret rule (ingest/secrets.py).
#[pyfunction]
fn has_secret_anchor<'py>(py: Python<'py>, data: &Bound<'py, PyBytes>) -> bool {
    let bytes = data.as_bytes();
    py.allow_threads(|| anchors::has_anchor(bytes))
}

#[pymodule]
fn _decode(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(decode_events, module)?)?;
    module.add_function(wrap_pyfunction!(best_edges, module)?)?;
    module.add_function(wrap_pyfunction!(graph::call_stack_edges_of, module)?)?;
    module.add_function(wrap_pyfunction!(has_secret_anchor, module)?)?;
    Ok(())
}
