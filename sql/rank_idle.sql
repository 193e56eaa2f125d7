-- GPU idle time per run, phase and rank (all streams pooled) and how much a single gap weighs
-- in it: the idle time over the whole span beside the idle time inside ProfilerStep#N
-- windows. Two stray kernels far apart stretch a capture's span (an SGLang decode capture:
-- one 493 ms gap is 99.8% of its idle time): `gap_dominated` says so, and the idle within
-- steps is the figure to read then. From `gpu_busy` and the disjoint busy intervals of each
-- trace (`gpu_intervals`), merged per capture group (`capture_spans`).
--
-- Reads: capture_spans, cpu_ops, gpu_busy, gpu_intervals
--
-- Columns:
--   run, phase, rank     partition
--   span_ns              first to last activity within each capture group,
--                        summed, ns
--   idle_ns              span_ns - busy_ns (run_metrics' gpu_idle_ns), ns
--   largest_gap_ns       the longest time with no GPU activity on any stream, within a
--                        capture group, ns
--   largest_gap_share    largest_gap_ns / span_ns
--   gap_dominated        the largest gap is more than half of idle_ns and more than a tenth
--                        of the span: the span's idle time and utilisation describe one
--                        pause (stray kernels far apart, a wait before the first), not the
--                        workload
--   steps                ProfilerStep#N windows of the rank (0 without)
--   step_ns              their total duration on the CPU, ns (NULL without steps)
--   step_idle_ns         time inside them with no GPU activity on any stream, ns
--   step_idle_ratio      step_idle_ns / step_ns
CREATE OR REPLACE VIEW rank_idle AS
WITH busy AS (
  SELECT i.run, i.phase, i.rank, i.trace_id, c.capture_group, i.start_ns, i.end_ns
  FROM gpu_intervals AS i
  JOIN capture_spans AS c USING (run, phase, rank, trace_id)  -- a run filter reaches c
  WHERE i.kind = 'busy'
),
ordered AS (
  SELECT *,
         max(end_ns) OVER (
           PARTITION BY run, phase, rank, capture_group ORDER BY start_ns, end_ns
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_until
  FROM busy
),
gaps AS (
  SELECT run, phase, rank,
         max(CASE WHEN start_ns > covered_until THEN start_ns - covered_until ELSE 0 END)
           AS largest_gap_ns
  FROM ordered
  GROUP BY run, phase, rank
),
steps AS (
  SELECT run, phase, rank, trace_id, event_index, ts_ns AS start_ns, ts_ns + dur_ns AS end_ns
  FROM cpu_ops
  WHERE name LIKE 'ProfilerStep#%' AND dur_ns IS NOT NULL
),
step_busy AS (
  -- a trace's busy intervals are disjoint: their parts inside a step add up to its busy time
  -- (CASE, since DuckDB's least and greatest skip the NULLs of a step without activity)
  SELECT s.run, s.phase, s.rank, s.trace_id, s.event_index, s.start_ns, s.end_ns,
         coalesce(sum(CASE WHEN b.start_ns IS NOT NULL THEN least(b.end_ns, s.end_ns)
                           - greatest(b.start_ns, s.start_ns) END), 0) AS busy_ns
  FROM steps AS s
  LEFT JOIN busy AS b
    ON b.run = s.run AND b.phase = s.phase AND b.rank = s.rank AND b.trace_id = s.trace_id
   AND b.start_ns < s.end_ns AND b.end_ns > s.start_ns
  GROUP BY s.run, s.phase, s.rank, s.trace_id, s.event_index, s.start_ns, s.end_ns
),
step_totals AS (
  SELECT run, phase, rank, count(*) AS steps,
         CAST(sum(end_ns - start_ns) AS BIGINT) AS step_ns,
         CAST(sum(end_ns - start_ns - busy_ns) AS BIGINT) AS step_idle_ns
  FROM step_busy
  GROUP BY run, phase, rank
)
SELECT g.run, g.phase, g.rank, g.span_ns, g.span_ns - g.busy_ns AS idle_ns,
       x.largest_gap_ns,
       CASE WHEN g.span_ns > 0 THEN CAST(x.largest_gap_ns AS DOUBLE) / g.span_ns END
         AS largest_gap_share,
       coalesce(2 * x.largest_gap_ns > g.span_ns - g.busy_ns
                AND 10 * x.largest_gap_ns > g.span_ns, false) AS gap_dominated,
       coalesce(t.steps, 0) AS steps, t.step_ns, t.step_idle_ns,
       CASE WHEN t.step_ns > 0 THEN CAST(t.step_idle_ns AS DOUBLE) / t.step_ns END
         AS step_idle_ratio
FROM gpu_busy AS g
LEFT JOIN gaps AS x ON x.run = g.run AND x.phase = g.phase AND x.rank = g.rank
LEFT JOIN step_totals AS t ON t.run = g.run AND t.phase = g.phase AND t.rank = g.rank;
