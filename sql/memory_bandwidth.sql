-- Memory bandwidth over time per rank and kind of copy: HTA's memory bandwidth time series
-- (TraceCounters.get_memory_bw_time_series), a step function with one row per change, and
-- the bytes moved while it held.
--
-- GPU memory activity is categories gpu_memcpy and gpu_memset; its kind is the copy's
-- direction as the trace names it (`Memcpy DtoH`, `Memcpy HtoD`, `Memcpy DtoD`...; `Memset`),
-- as HTA's memory kernel types. Each copy adds bytes / dur_ns (GB/s, 10^9 bytes per s: bytes
-- per ns) from its start to its end (at equal times starts come first, so the rows of length
-- 0 between are not figures of their own). HTA reads the profiler's `memory bandwidth (GB/s)`
-- arg, its bytes over the duration it measured before the trace rounded it (DLRM rank 0's
-- largest copy: 14.43 GB/s there, 15.55 here), and stretches a 0 ns copy to 1 us; here the
-- rate is the bytes over the duration the trace holds, so that a copy's rows add up to its
-- bytes, and a 0 ns copy adds no rate and no bytes (it is counted in copies for a row of
-- length 0). Each trace is its own series. Bytes per time bucket:
--
--   SELECT rank, kind, ts_ns - ts_ns % 1000000 AS bucket_ns, sum(bytes) AS bytes
--   FROM memory_bandwidth GROUP BY ALL ORDER BY ALL   -- 1 ms buckets, by each change's start
--
-- Reads: kernels
--
-- Columns:
--   run, phase, rank   partition
--   trace_id           the trace
--   kind               Memcpy DtoH, Memcpy HtoD, Memcpy DtoD, ... or Memset
--   ts_ns              when the bandwidth changes, ns
--   next_ts_ns         the kind's next change, ns (NULL for its last)
--   copies             copies of the kind in flight from ts_ns until next_ts_ns
--   bandwidth_gbps     their bandwidth summed: bytes / dur_ns of each, GB/s
--   bytes              bytes they moved from ts_ns until next_ts_ns (bandwidth x time)
CREATE OR REPLACE VIEW memory_bandwidth AS
WITH copies AS (
  SELECT run, phase, rank, trace_id, event_index, ts_ns, dur_ns, bytes,
         CASE WHEN category = 'gpu_memset' THEN 'Memset'
              ELSE coalesce(nullif(regexp_extract(name, '^(Memcpy [A-Za-z]+)', 1), ''), 'Memcpy')
         END AS kind,
         CASE WHEN dur_ns > 0 THEN CAST(bytes AS DOUBLE) / dur_ns END AS gbps
  FROM kernels
  WHERE category IN ('gpu_memcpy', 'gpu_memset') AND dur_ns IS NOT NULL AND bytes IS NOT NULL
),
changes AS (
  SELECT run, phase, rank, trace_id, kind, ts_ns, 0 AS tie, event_index, 1 AS copies,
         coalesce(gbps, 0) AS gbps
  FROM copies
  UNION ALL
  SELECT run, phase, rank, trace_id, kind, ts_ns + dur_ns, 1, event_index, -1,
         -coalesce(gbps, 0)
  FROM copies
),
series AS (
  SELECT run, phase, rank, trace_id, kind, ts_ns,
         lead(ts_ns) OVER series_order AS next_ts_ns,
         CAST(sum(copies) OVER running AS BIGINT) AS copies,
         sum(gbps) OVER running AS bandwidth_gbps
  FROM changes
  WINDOW series_order AS (PARTITION BY run, phase, rank, trace_id, kind
                          ORDER BY ts_ns, tie, event_index),
         running AS (PARTITION BY run, phase, rank, trace_id, kind
                     ORDER BY ts_ns, tie, event_index ROWS UNBOUNDED PRECEDING)
)
SELECT run, phase, rank, trace_id, kind, ts_ns, next_ts_ns, copies,
       CASE WHEN copies > 0 THEN bandwidth_gbps ELSE 0 END AS bandwidth_gbps,
       CASE WHEN copies > 0 THEN bandwidth_gbps * (next_ts_ns - ts_ns) ELSE 0 END AS bytes
FROM series;
