-- Launch queue length per GPU stream over time: how many launched kernels, copies and sets
-- were waiting to start on the stream, as a step function with one row per change.
--
-- HTA's definition (TraceCounters.get_queue_length_time_series): the queue grows by one at
-- the start of the runtime or driver call that launched the activity and shrinks by one when
-- the activity starts on the GPU. GPU work is categories kernel, gpu_memcpy, gpu_memset and
-- mtia_ccp_events with a launch in the trace (`_launch_calls`, matched by correlation id).
-- Unlike HTA, whose launches are a fixed list of calls (cudaLaunchKernel, cudaMemcpyAsync,
-- hipLaunchKernel...), any call sharing the correlation id counts: a CUDA or HIP graph
-- launch (one call, one id) adds one to its stream's queue for each kernel the graph runs,
-- all at the call's start; HTA leaves graph kernels out. At equal times launches come before
-- starts, then event order. A kernel starting before its launch (clocks out of step) can
-- make the length negative: it is shown as it is. Each trace is its own series.
--
-- Reads: kernels, _launch_calls
--
-- Columns:
--   run, phase, rank   partition
--   trace_id           the trace
--   stream             GPU stream
--   ts_ns              when the length changes, ns
--   change             launch (+1) or start (-1)
--   event_index        the GPU activity launched or started (in kernels)
--   queue_length       the length from ts_ns until next_ts_ns
--   next_ts_ns         the stream's next change, ns (NULL for its last)
CREATE OR REPLACE VIEW stream_queue AS
WITH launched AS (
  SELECT k.run, k.phase, k.rank, k.trace_id, k.stream, k.event_index, k.ts_ns,
         l.launch_ts_ns
  FROM kernels AS k
  JOIN _launch_calls AS l
    ON l.run = k.run AND l.phase = k.phase AND l.rank = k.rank AND l.trace_id = k.trace_id
   AND l.correlation = k.correlation
  WHERE k.category IN ('kernel', 'gpu_memcpy', 'gpu_memset', 'mtia_ccp_events')
    AND k.stream IS NOT NULL
),
-- each launched activity twice, its launch (tie 0) and its start (tie 1): a join with two
-- rows, not a union of two reads of `launched`, which made DuckDB materialize it and compute
-- the series even for a count of the rows
changes AS (
  SELECT l.run, l.phase, l.rank, l.trace_id, l.stream,
         CASE WHEN c.tie = 0 THEN l.launch_ts_ns ELSE l.ts_ns END AS ts_ns, c.tie,
         l.event_index
  FROM launched AS l
  CROSS JOIN (VALUES (0), (1)) AS c(tie)
)
-- A trace id names one trace (of one run, phase and rank): the series are partitioned by it
-- and the stream alone, which sorts the changes of 64 ranks in 0.7-0.8 of the time that the
-- string keys of run and phase took.
SELECT run, phase, rank, trace_id, stream, ts_ns,
       CASE WHEN tie = 0 THEN 'launch' ELSE 'start' END AS change, event_index,
       CAST(sum(1 - 2 * tie) OVER (
         PARTITION BY trace_id, stream ORDER BY ts_ns, tie, event_index
         ROWS UNBOUNDED PRECEDING) AS BIGINT) AS queue_length,
       lead(ts_ns) OVER (
         PARTITION BY trace_id, stream ORDER BY ts_ns, tie, event_index) AS next_ts_ns
FROM changes;
