//! The longest paths of a step's critical-path graph: `_best_edges_reference` of
//! ingest/critical_path.py, the Python reference it is tested against, step for step (the
//! same topological order, the same ties), as the per-node loop costs ~1 s of the 254 MB
//! trace's ingest in Python.

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
