//! tracewh's native decode core, `tracewh.ingest._decode`: the one loop that touches every
//! byte of a trace's events, in Rust. `decode_events(data)` reads a JSON array of events with
//! the GIL released and returns their columns as Arrow buffers (see `decode`), or None when
//! the chunk holds something only the Python reference decoder reproduces exactly.
//! `best_edges` is the one loop of the critical path measured at ingest (see `graph`),
//! `HostTree` a layer of the host call tree the other per-trace measures read (`tree`), and
//! `has_secret_anchor` the test of a chunk for what a secret rule could match (`anchors`), and
//! `count_phase_keys` the reader's count of a chunk's events.

mod anchors;
mod columns;
mod decode;
mod graph;
mod json;
mod numbers;
mod tables;
mod tree;

use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use columns::{Column, StrColumn, Validity};
use decode::{ColumnOf, Events};
use tables::{Built, Plan};

/// The bytes of a slice of plain numbers (i32, i64, f64), as Arrow lays them out.
fn raw_bytes<T: Copy>(values: &[T]) -> &[u8] {
    // SAFETY: integers and floats have no padding and every byte pattern is valid u8.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

trait AsBytes {
    fn as_bytes(&self) -> &[u8];
}

impl<T: Copy> AsBytes for Vec<T> {
    fn as_bytes(&self) -> &[u8] {
        raw_bytes(self)
    }
}

impl<T: Copy> AsBytes for std::sync::Arc<Vec<T>> {
    fn as_bytes(&self) -> &[u8] {
        raw_bytes(self)
    }
}

/// A column's buffer, lent to Python without a copy (buffer protocol: `pyarrow.py_buffer`
/// wraps it and keeps it alive). Copying every buffer into a bytes object was a tenth of the
/// decode's time, and as much memory again while both lived.
#[pyclass(frozen)]
struct Buffer(Box<dyn AsBytes + Send + Sync>);

#[pymethods]
impl Buffer {
    /// # Safety
    /// Called by Python's buffer protocol with a view to fill.
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::os::raw::c_int,
    ) -> PyResult<()> {
        let bytes = slf.get().0.as_bytes();
        // SAFETY: the view is Python's to fill; the bytes live as long as `slf`, which the
        // view holds a reference to (read-only, so never written through it).
        let filled = unsafe {
            pyo3::ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                bytes.as_ptr() as *mut std::os::raw::c_void,
                bytes.len() as pyo3::ffi::Py_ssize_t,
                1,
                flags,
            )
        };
        if filled == -1 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }
}

fn lend<'py>(
    py: Python<'py>,
    data: impl AsBytes + Send + Sync + 'static,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(Bound::new(py, Buffer(Box::new(data)))?.into_any())
}

fn validity<'py>(py: Python<'py>, validity: Validity) -> PyResult<Option<Bound<'py, PyAny>>> {
    (validity.nulls > 0)
        .then(|| lend(py, validity.bits))
        .transpose()
}

/// (validity or None, offsets, data) of a string column.
fn strings(py: Python<'_>, column: StrColumn) -> PyResult<Bound<'_, PyAny>> {
    let buffers = (
        validity(py, column.validity)?,
        lend(py, column.offsets)?,
        lend(py, column.data)?,
    );
    buffers.into_pyobject(py).map(|t| t.into_any())
}

/// (validity or None, values) of a fixed-width column.
fn values<T: Copy + Send + Sync + 'static>(
    py: Python<'_>,
    column: Column<T>,
) -> PyResult<Bound<'_, PyAny>> {
    let buffers = (validity(py, column.validity)?, lend(py, column.values)?);
    buffers.into_pyobject(py).map(|t| t.into_any())
}

fn to_dict(py: Python<'_>, events: Events) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("events", events.count)?;
    for (key, column) in events.into_columns() {
        let buffers = match column {
            ColumnOf::Str(column) => strings(py, column)?,
            ColumnOf::Int(column) => values(py, column)?,
            ColumnOf::Float(column) => values(py, column)?,
        };
        out.set_item(key, buffers)?;
    }
    Ok(out)
}

/// The bytes of an object with the buffer protocol (bytes, or the bytearray a chunk is read
/// into), held without a copy: copying a 16 MB chunk into a bytes object held as much memory
/// again in each lane while it was decoded. The view holds the object, and a bytearray whose
/// buffer is exported cannot be resized, so the bytes stay put while the GIL is released.
struct Bytes(PyBuffer<u8>);

impl Bytes {
    fn of(data: &Bound<'_, PyAny>) -> PyResult<Self> {
        let view = PyBuffer::<u8>::get(data)?;
        if !view.is_c_contiguous() {
            return Err(pyo3::exceptions::PyBufferError::new_err(
                "the bytes must be contiguous",
            ));
        }
        Ok(Self(view))
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: a contiguous buffer of len_bytes u8 (checked above), alive and unmoved while
        // the view lives; nothing writes into it while it is read (the caller's chunk).
        unsafe { std::slice::from_raw_parts(self.0.buf_ptr() as *const u8, self.0.len_bytes()) }
    }
}

/// Decode a JSON array of trace events (bytes) into a dict of column buffers, or None when
/// the Python reference must decode it (see `decode`).
#[pyfunction]
fn decode_events<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let data = Bytes::of(data)?;
    let bytes = data.as_slice();
    match py.allow_threads(|| decode::decode(bytes)) {
        Ok(events) => to_dict(py, events).map(Some),
        Err(json::Unsupported) => Ok(None),
    }
}

/// The chunk's tables: `decode_tables(data, first_event, plan)` decodes the JSON array of
/// events `data` (bytes or bytearray), calls `plan` with its distinct (ph, cat or None,
/// events, events holding [dur, id, bp, s]) pairs, which returns for each table (name, the
/// pairs' codes, the category of each, [(Arrow type, [core column, ...]), ...]) or None to
/// decline, and returns (events, [(name, rows, [column buffers, ...]), ...]); None where the
/// reference must decode the chunk (see `decode`) or a value does not fit its column (see
/// `tables`).
#[pyfunction]
fn decode_tables<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    first_event: i64,
    plan: &Bound<'py, PyAny>,
) -> PyResult<Option<(usize, Bound<'py, PyList>)>> {
    let data = Bytes::of(data)?;
    let bytes = data.as_slice();
    let Ok(events) = py.allow_threads(|| decode::decode(bytes)) else {
        return Ok(None);
    };
    let pairs = py.allow_threads(|| tables::pairs(&events));
    let offered = PyList::empty(py);
    for (index, (ph, cat)) in pairs.keys.iter().enumerate() {
        // the chunk is UTF-8 (decode checked it), and so is each string in it
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let fields = pairs.fields[index];
        offered.append((
            text(ph),
            cat.as_deref().map(text),
            pairs.counts[index],
            fields,
        ))?;
    }
    let planned = plan.call1((offered,))?;
    if planned.is_none() {
        return Ok(None);
    }
    let mut names = Vec::new();
    let mut plans = Vec::new();
    for table in planned.try_iter()? {
        let (name, codes, categories, columns): (String, _, _, _) = table?.extract()?;
        names.push(name);
        plans.push(Plan {
            codes,
            categories,
            columns,
        });
    }
    let Ok(built) = py.allow_threads(|| tables::build(events, &pairs, first_event, &plans)) else {
        return Ok(None);
    };
    let out = PyList::empty(py);
    for (name, (rows, columns)) in names.iter().zip(built) {
        let buffers = PyList::empty(py);
        for column in columns {
            buffers.append(match column {
                Built::Str(column) => strings(py, column)?,
                Built::Int64(column) => values(py, column)?,
                Built::Int32(column) => values(py, column)?,
                Built::Float64(column) => values(py, column)?,
            })?;
        }
        out.append((name, rows, buffers))?;
    }
    Ok(Some((pairs.code_of_event.len(), out)))
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

/// Whether the JSON text `data` (bytes or bytearray) holds an anchor of a secret rule
/// (ingest/secrets.py).
#[pyfunction]
fn has_secret_anchor<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<bool> {
    let data = Bytes::of(data)?;
    let bytes = data.as_slice();
    Ok(py.allow_threads(|| anchors::has_anchor(bytes)))
}

/// How many times `"ph"` occurs, not overlapping, in data[start:end] (`data` bytes or
/// bytearray): as bytes.count, with the GIL released (the reader's count of a chunk's events).
#[pyfunction]
fn count_phase_keys<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    start: usize,
    end: usize,
) -> PyResult<usize> {
    let data = Bytes::of(data)?;
    let range = data.as_slice().get(start..end).ok_or_else(|| {
        pyo3::exceptions::PyIndexError::new_err("the range is not within the bytes")
    })?;
    Ok(py.allow_threads(|| memchr::memmem::find_iter(range, b"\"ph\"").count()))
}

#[pymodule]
fn _decode(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(decode_events, module)?)?;
    module.add_function(wrap_pyfunction!(decode_tables, module)?)?;
    module.add_function(wrap_pyfunction!(best_edges, module)?)?;
    module.add_function(wrap_pyfunction!(graph::call_stack_edges_of, module)?)?;
    module.add_function(wrap_pyfunction!(graph::walks_of, module)?)?;
    module.add_function(wrap_pyfunction!(graph::gpu_edges_of, module)?)?;
    module.add_function(wrap_pyfunction!(has_secret_anchor, module)?)?;
    module.add_function(wrap_pyfunction!(count_phase_keys, module)?)?;
    module.add_class::<tree::HostTree>()?;
    Ok(())
}
