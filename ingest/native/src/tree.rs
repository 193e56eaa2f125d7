//! One layer of a trace's host call tree (ingest/ops.py's `_Tree`, the numpy reference it is
//! tested against): each placed event's depth and parent, by one walk over the events in
//! start order keeping the open members' ends, instead of the reference's sorted searches
//! over the whole trace (a tenth of the per-trace measures' time for the 254 MB trace, and
//! a dozen whole-trace arrays at their peak of memory). The tree is held here and its
//! columns lent to numpy; `ancestors` walks up the parents.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

use pyo3::buffer::{Element, PyBuffer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Depth and parent (-1: none) of each event: `order` holds the events' indices in start
/// order (each thread's together: by start, longer first, then file order); an event's depth
/// is the number of members open at its start (`opens`: members with a positive `span`; one
/// ending where another starts is closed by then), its parent the last member opened one
/// level up on its thread. Events not `placed` have depth 0 and no parent. None when the
/// columns differ in length, `order` names no event, or there are more events than i32 holds.
pub fn host_tree(
    order: &[i64],
    thread: &[i64],
    start: &[i64],
    span: &[i64],
    opens: &[u8],
    placed: &[u8],
) -> Option<(Vec<i32>, Vec<i32>)> {
    let size = thread.len();
    if [start.len(), span.len(), opens.len(), placed.len()] != [size; 4] {
        return None;
    }
    i32::try_from(size).ok()?;
    let mut depth = vec![0i32; size];
    let mut parent = vec![-1i32; size];
    let mut ends: BinaryHeap<Reverse<i64>> = BinaryHeap::new();
    // The last member opened at each level so far on the thread.
    let mut last: Vec<i32> = Vec::new();
    let mut current = None;
    for &event in order {
        let event = usize::try_from(event).ok().filter(|&e| e < size)?;
        if current != Some(thread[event]) {
            current = Some(thread[event]);
            ends.clear();
            last.clear();
        }
        let ts = start[event];
        while ends.peek().is_some_and(|&Reverse(end)| end <= ts) {
            ends.pop();
        }
        let level = ends.len();
        if placed[event] != 0 {
            depth[event] = level as i32;
            if level > 0 {
                parent[event] = last[level - 1];
            }
        }
        if opens[event] != 0 {
            if last.len() <= level {
                last.resize(level + 1, -1);
            }
            last[level] = event as i32;
            ends.push(Reverse(ts.saturating_add(span[event])));
        }
    }
    Some((depth, parent))
}

/// For each of `rows` (deeper than its `levels`), its ancestor at that level: its parent's,
/// and so on up (the last member opened at that level before it on its thread: each member
/// opened since at a lower level would have closed the chain below it); -1 for a row at
/// or above its level. None when a row is out of range or a parent chain does not rise.
pub fn ancestors(depth: &[i32], parent: &[i32], rows: &[i64], levels: &[i64]) -> Option<Vec<i64>> {
    if rows.len() != levels.len() {
        return None;
    }
    let size = depth.len();
    let index = |value: i64| usize::try_from(value).ok().filter(|&r| r < size);
    rows.iter()
        .zip(levels)
        .map(|(&row, &level)| {
            let mut at = index(row)?;
            if i64::from(depth[at]) <= level {
                return Some(-1);
            }
            while i64::from(depth[at]) > level {
                let up = index(i64::from(parent[at]))?;
                if depth[up] >= depth[at] {
                    return None;
                }
                at = up;
            }
            Some(at as i64)
        })
        .collect()
}

/// The values of a numpy array of `T`: borrowed where they lie in one aligned run (every
/// caller's whole-trace columns: copying the four int64 ones of the 254 MB trace was 17 MB
/// at the measures' peak of memory, for each layer built), else copied.
enum Values<T: Element> {
    Borrowed(PyBuffer<T>),
    Copied(Vec<T>),
}

impl<T: Element + Copy> Values<T> {
    fn of(array: &Bound<'_, PyAny>) -> PyResult<Self> {
        let buffer = PyBuffer::<T>::get(array)?;
        let aligned = (buffer.buf_ptr() as usize).is_multiple_of(std::mem::align_of::<T>());
        Ok(if buffer.is_c_contiguous() && aligned && buffer.item_count() > 0 {
            Values::Borrowed(buffer)
        } else {
            Values::Copied(buffer.to_vec(array.py())?)
        })
    }

    fn as_slice(&self) -> &[T] {
        match self {
            // SAFETY: the buffer is C-contiguous, aligned and not empty, so its item_count
            // items of T lie at buf_ptr; the exporter keeps them while the buffer is held,
            // which outlives the slice, and the callers' arrays are not written meanwhile.
            Values::Borrowed(buffer) => unsafe {
                std::slice::from_raw_parts(buffer.buf_ptr() as *const T, buffer.item_count())
            },
            Values::Copied(values) => values,
        }
    }
}

/// One layer of the host tree (see `host_tree`): `depth()` and `parent()` lend its int32
/// columns, `ancestors(rows, levels)` walks up them.
#[pyclass(frozen)]
pub struct HostTree {
    depth: Arc<Vec<i32>>,
    parent: Arc<Vec<i32>>,
}

#[pymethods]
impl HostTree {
    /// The layer of events given as int64 arrays (`order`: their indices in start order;
    /// `thread`, `start`, `span`) and uint8 flags (`opens`, `placed`).
    #[new]
    fn new(
        py: Python<'_>,
        order: &Bound<'_, PyAny>,
        thread: &Bound<'_, PyAny>,
        start: &Bound<'_, PyAny>,
        span: &Bound<'_, PyAny>,
        opens: &Bound<'_, PyAny>,
        placed: &Bound<'_, PyAny>,
    ) -> PyResult<Self> {
        let (order, thread, start, span) = (
            Values::<i64>::of(order)?,
            Values::<i64>::of(thread)?,
            Values::<i64>::of(start)?,
            Values::<i64>::of(span)?,
        );
        let (opens, placed) = (Values::<u8>::of(opens)?, Values::<u8>::of(placed)?);
        let (order, thread, start, span, opens, placed) = (
            order.as_slice(),
            thread.as_slice(),
            start.as_slice(),
            span.as_slice(),
            opens.as_slice(),
            placed.as_slice(),
        );
        let built = py.allow_threads(|| host_tree(order, thread, start, span, opens, placed));
        let (depth, parent) = built.ok_or_else(|| {
            PyValueError::new_err("the host events' columns differ in length or order names none")
        })?;
        Ok(HostTree {
            depth: Arc::new(depth),
            parent: Arc::new(parent),
        })
    }

    /// Each event's depth (int32 buffer).
    fn depth<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        super::lend(py, Arc::clone(&self.depth))
    }

    /// Each event's parent, -1 for none (int32 buffer).
    fn parent<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        super::lend(py, Arc::clone(&self.parent))
    }

    /// The ancestor of each of `rows` at its level of `levels` (int64 arrays), -1 for a row
    /// not deeper than its level (int64 buffer).
    fn ancestors<'py>(
        &self,
        py: Python<'py>,
        rows: &Bound<'py, PyAny>,
        levels: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (rows, levels) = (Values::<i64>::of(rows)?, Values::<i64>::of(levels)?);
        let (rows, levels) = (rows.as_slice(), levels.as_slice());
        let (depth, parent) = (Arc::clone(&self.depth), Arc::clone(&self.parent));
        let found = py.allow_threads(|| ancestors(&depth, &parent, rows, levels));
        let found = found.ok_or_else(|| {
            PyValueError::new_err("a row is out of range or its parents do not rise")
        })?;
        super::lend(py, found)
    }
}
