//! The longest paths of a step's critical-path graph: `_best_edges_reference` of
//! ingest/critical_path.py, the Python reference it is tested against, step for step (the
//! same topological order, the same ties), as the per-node loop costs ~1 s of the 254 MB
//! trace's ingest in Python; `call_stack_edges`, the call-stack pass that builds most of the
//! graph's edges, as `_call_stack_edges_reference` does (but the edges between two calls that
//! take the runtime's lock, which the lock chain gives); and `gpu_edges`, the GPU work's edges,
//! as `_gpu_edges_reference`.

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::{HashMap, HashSet};

/// Each node's best incoming edge (-1 for none) and the end node of a longest path (-1 for
/// none) of the DAG of `size` nodes and edges `src[e] -> dst[e]` of `weight[e]`; None when an
/// edge names no node. Walking `via` back from any node gives the longest path into it.
pub fn best_edges(
    size: usize,
    src: &[i64],
    dst: &[i64],
    weight: &[i64],
) -> Option<(Vec<i64>, i64)> {
    let node = |value: i64| usize::try_from(value).ok().filter(|&n| n < size);
    let (mut sources, mut targets) = (Vec::with_capacity(src.len()), Vec::with_capacity(src.len()));
    for (&s, &d) in src.iter().zip(dst) {
        sources.push(node(s)?);
        targets.push(node(d)?);
    }
    if sources.len() != weight.len() {
        return None;
    }
    if sources.is_empty() {
        return Some((vec![-1; size], -1));
    }
    // Edges grouped by source in their own order (a stable sort by source).
    let mut first = vec![0usize; size + 1];
    let mut pending = vec![0u32; size];
    for (&s, &d) in sources.iter().zip(&targets) {
        first[s + 1] += 1;
        pending[d] += 1;
    }
    for n in 0..size {
        first[n + 1] += first[n];
    }
    let mut out_edge = vec![0usize; sources.len()];
    let mut next = first.clone();
    for (edge, &s) in sources.iter().enumerate() {
        out_edge[next[s]] = edge;
        next[s] += 1;
    }
    // Lengths in i128: a sum of i64 weights along a path cannot overflow it.
    let mut length: Vec<Option<i128>> = vec![None; size];
    let mut via = vec![usize::MAX; size];
    let mut ready: Vec<usize> = (0..size).filter(|&n| pending[n] == 0).collect();
    let (mut end, mut longest) = (None, -1i128);
    while let Some(n) = ready.pop() {
        if length[n].is_none_or(|l| l < 0) {
            // no predecessor, or a fresh start
            length[n] = Some(0);
            via[n] = usize::MAX;
        }
        let here = length[n].unwrap_or(0);
        if here > longest {
            end = Some(n);
            longest = here;
        }
        for &edge in &out_edge[first[n]..first[n + 1]] {
            let target = targets[edge];
            let candidate = here + i128::from(weight[edge]);
            if length[target].is_none_or(|l| candidate > l) {
                length[target] = Some(candidate);
                via[target] = edge;
            }
            pending[target] -= 1;
            if pending[target] == 0 {
                ready.push(target);
            }
        }
    }
    let via = via
        .into_iter()
        .map(|edge| if edge == usize::MAX { -1 } else { edge as i64 });
    Some((via.collect(), end.map_or(-1, |n| n as i64)))
}

/// Edge kinds of ingest/critical_path.py: time spent in an event, a zero-weight link between
/// top-level events, a zero-weight span into a blocking call's end.
const SPAN: i64 = 0;
const LINK: i64 = 1;
const WAIT: i64 = 4;

/// The call-stack edges of a window's host events, `_call_stack_edges_reference` of
/// ingest/critical_path.py step for step (the same edges in the same order): event i (rows
/// ordered by thread, start, longer first) has nodes 2i (start) and 2i+1 (end); an edge
/// between two `locking` calls is left out but from one's end to the other's start. Returns
/// the columns (src, dst, kind, attributed event); None when the columns' lengths differ.
pub fn call_stack_edges(
    threads: &[i64],
    starts: &[i64],
    ends: &[i64],
    blocking: &[u8],
    locking: &[u8],
) -> Option<[Vec<i64>; 4]> {
    let size = threads.len();
    if [starts.len(), ends.len(), blocking.len(), locking.len()] != [size; 4] {
        return None;
    }
    // Whether the edge from `node` to event `i`'s start (`into_end` false) or end is the
    // lock chain's: both calls take the lock, and it does not go from an end to a start.
    let locked = |node: i64, i: usize, into_end: bool| {
        locking[i] != 0 && locking[(node / 2) as usize] != 0 && (into_end || node % 2 == 0)
    };
    let mut edges: [Vec<i64>; 4] = std::array::from_fn(|_| Vec::with_capacity(3 * size));
    let mut push = |src: i64, dst: i64, kind: i64, event: i64| {
        for (column, value) in edges.iter_mut().zip([src, dst, kind, event]) {
            column.push(value);
        }
    };
    let mut stack: Vec<usize> = Vec::new();
    let (mut last, mut top_end): (Option<i64>, Option<i64>) = (None, None);
    // Close the innermost open event: the edge into its end; the new last node and the end
    // of the top-level event when it closed one.
    let exit = |stack: &mut Vec<usize>, last: i64, push: &mut dyn FnMut(i64, i64, i64, i64)| {
        let i = stack.pop().unwrap_or_default();
        let event = if last % 2 == 0 { last / 2 } else { i as i64 };
        let kind = if blocking[i] != 0 { WAIT } else { SPAN };
        if !locked(last, i, true) {
            push(last, 2 * i as i64 + 1, kind, event);
        }
        if stack.is_empty() {
            (None, Some(2 * i as i64 + 1))
        } else {
            (Some(2 * i as i64 + 1), None)
        }
    };
    let mut thread = None;
    for i in 0..size {
        let ts = starts[i];
        if thread != Some(threads[i]) {
            while !stack.is_empty() {
                last = exit(&mut stack, last.unwrap_or_default(), &mut push).0;
            }
            thread = Some(threads[i]);
            top_end = None;
        }
        while stack.last().is_some_and(|&open| ends[open] <= ts) {
            (last, top_end) = exit(&mut stack, last.unwrap_or_default(), &mut push);
        }
        if let (true, Some(end)) = (stack.is_empty(), top_end) {
            push(end, 2 * i as i64, LINK, -1);
        }
        if let Some(node) = last.filter(|&node| !locked(node, i, false)) {
            let event = if node % 2 == 0 {
                node / 2
            } else {
                *stack.last()? as i64
            };
            push(node, 2 * i as i64, SPAN, event);
        }
        stack.push(i);
        last = Some(2 * i as i64);
    }
    while !stack.is_empty() {
        last = exit(&mut stack, last.unwrap_or_default(), &mut push).0;
    }
    Some(edges)
}

/// (src, dst, kind, attributed event), each int64 bytes, of the call-stack edges of host
/// events given as thread codes, starts and ends (int64 bytes) and blocking and locking
/// flags (a byte each), as ingest/critical_path.py's `_call_stack_edges_reference`.
#[pyfunction]
pub fn call_stack_edges_of<'py>(
    py: Python<'py>,
    threads: &Bound<'py, PyBytes>,
    starts: &Bound<'py, PyBytes>,
    ends: &Bound<'py, PyBytes>,
    blocking: &Bound<'py, PyBytes>,
    locking: &Bound<'py, PyBytes>,
) -> PyResult<[Bound<'py, PyBytes>; 4]> {
    let (threads, starts, ends) = (threads.as_bytes(), starts.as_bytes(), ends.as_bytes());
    let (blocking, locking) = (blocking.as_bytes(), locking.as_bytes());
    let found = py.allow_threads(|| {
        call_stack_edges(
            &super::int64s(threads),
            &super::int64s(starts),
            &super::int64s(ends),
            blocking,
            locking,
        )
    });
    let edges = found.ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err("the event columns differ in length")
    })?;
    Ok(edges.map(|column| PyBytes::new(py, super::raw_bytes(&column))))
}

/// The edges of the best path into each of `nodes`, walked back along `via` (each node's best
/// incoming edge, -1 for none) from the node to the path's start, or to and with the first
/// edge whose `stop` flag is set (`stop` empty: none), each path in path order:
/// `_walk_reference` of ingest/critical_path.py for every node at once (the segments' walks
/// were ~40% of DeepSeek's step in Python). Returns the paths' edges one after the other and
/// where each path starts in them (nodes + 1 offsets); None when an edge or node is out of
/// range, or `via` has a cycle.
pub fn walks(via: &[i64], src: &[i64], nodes: &[i64], stop: &[u8]) -> Option<(Vec<i64>, Vec<i64>)> {
    let (mut edges, mut offsets) = (Vec::new(), vec![0i64]);
    for &node in nodes {
        let first = edges.len();
        let mut edge = if node >= 0 {
            *via.get(usize::try_from(node).ok()?)?
        } else {
            -1
        };
        while edge >= 0 {
            // a DAG's walk back takes each edge once at most: more steps is a cycle
            if edges.len() - first >= src.len() {
                return None;
            }
            let at = usize::try_from(edge).ok()?;
            edges.push(edge);
            if stop.get(at).is_some_and(|&flag| flag != 0) {
                break;
            }
            edge = *via.get(usize::try_from(*src.get(at)?).ok()?)?;
        }
        edges[first..].reverse();
        offsets.push(edges.len() as i64);
    }
    Some((edges, offsets))
}

/// (the paths' edges, their offsets), each int64 bytes, of `walks` over `via`, `src` and
/// `nodes` (int64 bytes) and `stop` (a byte per edge, or none), as ingest/critical_path.py's
/// `_walk_reference` for each node.
#[pyfunction]
pub fn walks_of<'py>(
    py: Python<'py>,
    via: &Bound<'py, PyBytes>,
    src: &Bound<'py, PyBytes>,
    nodes: &Bound<'py, PyBytes>,
    stop: &Bound<'py, PyBytes>,
) -> PyResult<[Bound<'py, PyBytes>; 2]> {
    let (via, src, nodes, stop) = (
        via.as_bytes(),
        src.as_bytes(),
        nodes.as_bytes(),
        stop.as_bytes(),
    );
    let found = py.allow_threads(|| {
        walks(
            &super::int64s(via),
            &super::int64s(src),
            &super::int64s(nodes),
            stop,
        )
    });
    let (edges, offsets) = found.ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err("a walk names no edge or node of the graph")
    })?;
    Ok([
        PyBytes::new(py, super::raw_bytes(&edges)),
        PyBytes::new(py, super::raw_bytes(&offsets)),
    ])
}

/// Edge kinds of the GPU work (ingest/critical_path.py): a launch delay, a kernel-kernel gap,
/// a synchronisation.
const LAUNCH: i64 = 2;
const GAP: i64 = 3;
const SYNC: i64 = 5;
/// Sync kinds of ingest/critical_path.py (an Event Sync is none of these: it waits for its
/// source).
const CONTEXT_SYNC: i64 = 0;
const STREAM_SYNC: i64 = 1;
const STREAM_WAIT: i64 = 3;
/// The longest gap between two works of a stream that is a kernel-kernel delay.
const GAP_LIMIT_NS: i64 = 1_500_000;

/// A window's GPU work and syncs: the columns of ingest/critical_path.py's `GpuWindow`, in
/// its field order.
pub struct GpuWindow {
    order: Vec<i64>,
    stream: Vec<i64>,
    at_launch: Vec<i64>,
    at_start: Vec<i64>,
    end: Vec<i64>,
    ts: Vec<i64>,
    graph: Vec<i64>,
    launch: Vec<i64>,
    launch_ts: Vec<i64>,
    launch_node: Vec<i64>,
    sync_kind: Vec<i64>,
    sync_stream: Vec<i64>,
    sync_source: Vec<i64>,
    sync_target: Vec<i64>,
    call_end: Vec<i64>,
    call_end_ts: Vec<i64>,
}

impl GpuWindow {
    /// The window of 16 int64 columns; None when they are not 16, their lengths differ
    /// within the work's or the syncs' columns, or `order` or a sync's source or target
    /// names no row (which the walk below then indexes without a check failing).
    fn of(columns: Vec<Vec<i64>>) -> Option<Self> {
        let columns: [Vec<i64>; 16] = columns.try_into().ok()?;
        let [order, stream, at_launch, at_start, end, ts, graph, launch, launch_ts, launch_node,
            sync_kind, sync_stream, sync_source, sync_target, call_end, call_end_ts] = columns;
        let window = Self {
            order,
            stream,
            at_launch,
            at_start,
            end,
            ts,
            graph,
            launch,
            launch_ts,
            launch_node,
            sync_kind,
            sync_stream,
            sync_source,
            sync_target,
            call_end,
            call_end_ts,
        };
        let (rows, syncs) = (window.stream.len(), window.sync_kind.len());
        let work = [&window.at_launch, &window.at_start, &window.end, &window.ts];
        let more = [
            &window.graph,
            &window.launch,
            &window.launch_ts,
            &window.launch_node,
        ];
        let sync = [
            &window.sync_stream,
            &window.sync_source,
            &window.sync_target,
        ];
        let in_rows = |value: &i64| *value < rows as i64;
        let valid = work.iter().chain(&more).all(|column| column.len() == rows)
            && sync.iter().all(|column| column.len() == syncs)
            && window.call_end.len() == syncs
            && window.call_end_ts.len() == syncs
            && window
                .order
                .iter()
                .all(|&k| k >= 0 && (k as usize) < rows + syncs)
            && window.sync_source.iter().all(in_rows)
            && window.sync_target.iter().all(in_rows);
        valid.then_some(window)
    }
}

/// The GPU edges of `window`, whose work's nodes start at `base` (work row j: nodes base + 2j
/// and base + 2j + 1): `_gpu_edges_reference` of ingest/critical_path.py step for step (the
/// same edges in the same order). Returns the columns (src, dst, kind, attributed event).
pub fn gpu_edges(base: i64, w: &GpuWindow) -> [Vec<i64>; 4] {
    let rows = w.stream.len();
    let mut edges: [Vec<i64>; 4] = Default::default();
    let mut push = |edge: [i64; 4]| {
        for (column, value) in edges.iter_mut().zip(edge) {
            column.push(value);
        }
    };
    // each stream's last work, in the order the streams first had one (Python's dict order)
    let (mut last, mut last_at) = (Vec::<(i64, usize)>::new(), HashMap::<i64, usize>::new());
    let mut held = HashMap::<usize, usize>::new();
    let mut graph_streams = HashSet::<(i64, i64)>::new();
    for &k in &w.order {
        let k = k as usize;
        if k >= rows {
            let s = k - rows;
            let (source, target) = (w.sync_source[s], w.sync_target[s]);
            if w.sync_kind[s] == STREAM_WAIT {
                if target >= 0 && source >= 0 {
                    held.insert(target as usize, source as usize);
                }
                continue;
            }
            let waited: Vec<usize> = match w.sync_kind[s] {
                CONTEXT_SYNC => last.iter().map(|&(_, j)| j).collect(),
                STREAM_SYNC => last_at
                    .get(&w.sync_stream[s])
                    .map(|&at| last[at].1)
                    .into_iter()
                    .collect(),
                _ if source >= 0 => vec![source as usize],
                _ => Vec::new(),
            };
            for j in waited {
                if w.end[j] <= w.call_end_ts[s] {
                    push([base + 2 * j as i64 + 1, w.call_end[s], SYNC, -1]);
                }
            }
            continue;
        }
        let (j, node) = (k, base + 2 * k as i64);
        push([node, node + 1, SPAN, node.div_euclid(2)]);
        let previous = last_at.get(&w.stream[j]).map(|&at| last[at].1);
        let source = held.remove(&j).filter(|&source| w.end[source] <= w.ts[j]);
        if let Some(source) = source {
            push([base + 2 * source as i64 + 1, node, SYNC, -1]);
        }
        let first_of_graph = w.graph[j] != 0 && graph_streams.insert((w.launch[j], w.stream[j]));
        let ended_before = |other: Option<usize>, time: i64| other.is_none_or(|o| w.end[o] < time);
        if ((w.at_launch[j] == 1 && w.at_start[j] == 0) || first_of_graph)
            && ended_before(previous, w.launch_ts[j])
            && ended_before(source, w.launch_ts[j])
        {
            let launch = w.launch_node[j]; // a graph's: attributed to its launch
            let attributed = if w.graph[j] != 0 {
                launch.div_euclid(2)
            } else {
                -1
            };
            push([launch, node, LAUNCH, attributed]);
        } else if let Some(previous) = previous {
            if w.ts[j] - w.end[previous] < GAP_LIMIT_NS && ended_before(source, w.end[previous]) {
                push([
                    base + 2 * previous as i64 + 1,
                    node,
                    GAP,
                    base.div_euclid(2) + previous as i64,
                ]);
            }
        }
        match last_at.get(&w.stream[j]) {
            Some(&at) => last[at].1 = j,
            None => {
                last_at.insert(w.stream[j], last.len());
                last.push((w.stream[j], j));
            }
        }
    }
    edges
}

/// (src, dst, kind, attributed event), each int64 bytes, of the GPU edges of a window given
/// as `GpuWindow`'s 16 columns (int64 bytes each) with its work's nodes from `base`, as
/// ingest/critical_path.py's `_gpu_edges_reference`.
#[pyfunction]
pub fn gpu_edges_of<'py>(
    py: Python<'py>,
    base: i64,
    columns: Vec<Bound<'py, PyBytes>>,
) -> PyResult<[Bound<'py, PyBytes>; 4]> {
    let columns: Vec<Vec<i64>> = columns
        .iter()
        .map(|c| super::int64s(c.as_bytes()))
        .collect();
    let window = GpuWindow::of(columns).ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err("the GPU window's columns do not agree")
    })?;
    let edges = py.allow_threads(|| gpu_edges(base, &window));
    Ok(edges.map(|column| PyBytes::new(py, super::raw_bytes(&column))))
}
