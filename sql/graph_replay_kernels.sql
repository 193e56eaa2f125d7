-- Each kernel a CUDA/HIP graph launch replayed, matched to the launch that put it into the
-- graph while it was captured: the captured launch's op, module and annotation are then the
-- replayed kernel's (op_kernels). One row per GPU activity of every graph launch of a run.
--
-- Captured graphs: in any trace of the run, the runtime calls on one thread between the end
-- of a StreamBeginCapture (cuda or hip) and the start of the next StreamEndCapture there
-- (the k-th begin with the k-th end); of those, the launches (a name with `Launch`, not a
-- graph launch) and the memcpy and memset calls, in start order. A trace holding them is
-- ingested as phase `capture` (when --phase is not given). Replayed graphs: a graph launch
-- (`GraphLaunch` in the name) and the GPU activity of its correlation, in GPU start order.
-- Both sides are keyed alike: a kernel by its name (a captured launch by its args.kernel),
-- memcpy and memset by kind (a `fillBuffer` kernel is a memset).
--
-- The graph a launch replays is chosen by its kernel sequence, not by annotation text:
-- among the captured graphs of the same run and rank, the one sharing the most (key, n-th
-- of that key) pairs with it, then the nearest in size, then the latest captured. Within
-- the pair the n-th replayed kernel of a key is the n-th captured launch of that key: when
-- the sequences agree, the k-th kernel is the k-th launch (TraceLens's positional match);
-- when they differ by a surplus launch of some key, the kernels of the other keys stay
-- matched (where a greedy scan loses its place); kernels reordered across streams keep their
-- launch as long as the kernels of one name keep their order.
--
-- Reads: runtime, kernels
--
-- Columns:
--   run, phase, rank              partition (the replay's)
--   trace_id                      the replay's trace
--   event_index                   the replayed GPU activity's event in kernels
--   launch_event_index            the graph launch's event in runtime
--   graph_status                  per graph launch: matched (every kernel matched, as many
--                                 as the graph's launches), partial (some), unmatched (none,
--                                 or no captured graph in the run)
--   capture_phase                 the phase of the trace that captured the graph (NULL:
--                                 unmatched launch)
--   capture_trace_id              that trace
--   capture_event_index           the StreamBeginCapture call that began the graph
--   captured_launch_event_index   the launch that put this kernel into the graph, in the
--                                 capture trace's runtime (NULL: no launch matched it)
CREATE OR REPLACE VIEW graph_replay_kernels AS
WITH launches AS (
  SELECT run, phase, rank, trace_id, event_index AS launch_event_index, correlation
  FROM runtime
  WHERE name LIKE '%GraphLaunch%' AND correlation IS NOT NULL AND correlation <> 0
),
replayed AS (
  SELECT l.run, l.phase, l.rank, l.trace_id, l.launch_event_index, k.event_index,
         CASE WHEN k.category = 'gpu_memcpy' OR k.name LIKE 'Memcpy%' THEN 'memcpy'
              WHEN k.category = 'gpu_memset' OR k.name LIKE 'Memset%'
                   OR k.name LIKE '%fillBuffer%' THEN 'memset'
              ELSE k.name END AS node,
         k.ts_ns
  FROM launches AS l
  JOIN kernels AS k
    ON k.run = l.run AND k.phase = l.phase AND k.rank = l.rank AND k.trace_id = l.trace_id
   AND k.correlation = l.correlation
  WHERE k.category NOT IN ('gpu_user_annotation', 'cuda_sync')
),
replayed_nth AS (
  SELECT *,
         row_number() OVER (PARTITION BY run, phase, rank, trace_id, launch_event_index, node
                            ORDER BY ts_ns, event_index) AS nth,
         count(*) OVER (PARTITION BY run, phase, rank, trace_id, launch_event_index) AS size
  FROM replayed
),
capture_calls AS (
  SELECT run, phase, rank, trace_id, event_index, name, pid, tid, ts_ns, dur_ns,
         row_number() OVER (PARTITION BY run, phase, rank, trace_id, pid, tid,
                                         name LIKE '%StreamBeginCapture%'
                            ORDER BY ts_ns, event_index) AS nth
  FROM runtime
  WHERE name LIKE '%StreamBeginCapture%' OR name LIKE '%StreamEndCapture%'
),
graphs AS (
  SELECT b.run, b.phase, b.rank, b.trace_id, b.event_index AS capture_event_index, b.pid,
         b.tid, b.ts_ns + coalesce(b.dur_ns, 0) AS begins_ns, e.ts_ns AS ends_ns
  FROM capture_calls AS b
  JOIN capture_calls AS e
    ON e.run = b.run AND e.phase = b.phase AND e.rank = b.rank AND e.trace_id = b.trace_id
   AND e.pid = b.pid AND e.tid = b.tid AND e.nth = b.nth
   AND e.name LIKE '%StreamEndCapture%'
  WHERE b.name LIKE '%StreamBeginCapture%'
),
captured AS (
  SELECT g.run, g.phase, g.rank, g.trace_id, g.capture_event_index,
         r.event_index AS captured_launch_event_index,
         CASE WHEN r.name LIKE '%Memcpy%' THEN 'memcpy'
              WHEN r.name LIKE '%Memset%' THEN 'memset'
              ELSE coalesce(json_extract_string(r.args, '$.kernel'), r.name) END AS node,
         r.ts_ns
  FROM graphs AS g
  JOIN runtime AS r
    ON r.run = g.run AND r.phase = g.phase AND r.rank = g.rank AND r.trace_id = g.trace_id
   AND r.pid = g.pid AND r.tid = g.tid AND r.ts_ns >= g.begins_ns AND r.ts_ns < g.ends_ns
  WHERE (r.name LIKE '%Launch%' AND r.name NOT LIKE '%GraphLaunch%')
     OR r.name LIKE '%Memcpy%' OR r.name LIKE '%Memset%'
),
captured_nth AS (
  SELECT *,
         row_number() OVER (PARTITION BY run, phase, rank, trace_id, capture_event_index, node
                            ORDER BY ts_ns, captured_launch_event_index) AS nth,
         count(*) OVER (PARTITION BY run, phase, rank, trace_id, capture_event_index) AS size,
         min(ts_ns) OVER (PARTITION BY run, phase, rank, trace_id, capture_event_index)
           AS captured_ns
  FROM captured
),
shared AS (
  SELECT r.run, r.phase, r.rank, r.trace_id, r.launch_event_index, r.size,
         c.phase AS capture_phase, c.trace_id AS capture_trace_id, c.capture_event_index,
         c.size AS capture_size, c.captured_ns, count(*) AS matches
  FROM replayed_nth AS r
  JOIN captured_nth AS c
    ON c.run = r.run AND c.rank = r.rank AND c.node = r.node AND c.nth = r.nth
  GROUP BY r.run, r.phase, r.rank, r.trace_id, r.launch_event_index, r.size, c.phase,
           c.trace_id, c.capture_event_index, c.size, c.captured_ns
),
chosen AS (
  SELECT *,
         CASE WHEN matches = size AND capture_size = size THEN 'matched' ELSE 'partial' END
           AS graph_status
  FROM (SELECT *, row_number() OVER (
                    PARTITION BY run, phase, rank, trace_id, launch_event_index
                    ORDER BY matches DESC, abs(capture_size - size), captured_ns DESC,
                             capture_trace_id, capture_event_index) AS choice
        FROM shared) AS s
  WHERE choice = 1
)
SELECT r.run, r.phase, r.rank, r.trace_id, r.event_index, r.launch_event_index,
       coalesce(g.graph_status, 'unmatched') AS graph_status, g.capture_phase,
       g.capture_trace_id, g.capture_event_index, c.captured_launch_event_index
FROM replayed_nth AS r
LEFT JOIN chosen AS g
  ON g.run = r.run AND g.phase = r.phase AND g.rank = r.rank AND g.trace_id = r.trace_id
 AND g.launch_event_index = r.launch_event_index
LEFT JOIN captured_nth AS c
  ON c.run = r.run AND c.phase = g.capture_phase AND c.rank = r.rank
 AND c.trace_id = g.capture_trace_id AND c.capture_event_index = g.capture_event_index
 AND c.node = r.node AND c.nth = r.nth;
