-- What bounds each ProfilerStep#N: the GPU, the host feeding it, or exposed communication.
--
-- Figures are times within the step's window on the CPU [start_ns, end_ns), GPU activity
-- clipped to it, all streams of the rank pooled:
--   gpu_busy_ns      GPU activity (gpu_intervals' busy union: all but gpu_user_annotation)
--   host_wait_ns     the GPU idle with no launched work waiting: the window minus the union
--                    of [launch, end) over GPU work (kernels, copies, sets; a kernel with no
--                    launch from its start)
--   empty_queue_ns   no launched work waiting to start on any stream: the window minus the
--                    union of [launch, start) (stream_queue's length 0 on every stream)
--   exposed_comm_ns  communication kernels running with no computation kernel: the union of
--                    both classes minus computation (`_rank_class_intervals`, the kernel rules)
-- and, over the GPU work launched in the step, the share of kernels that ran shorter than the
-- runtime call that launched them (the host cannot launch faster than the GPU runs them).
-- Verdict, first rule that holds (shares of dur_ns):
--   host_bound            host_wait_share >= 0.30 and at least exposed_comm_share
--   communication_bound   exposed_comm_share >= 0.30
--   gpu_bound             gpu_busy_share >= 0.80
--   mixed                 otherwise
-- Steps with no duration are left out; a step with no GPU activity is host_bound.
--
-- A trace's figures never change after ingest: they are measured then (`step_time`, the
-- same rules written without SQL), and read for a rank whose only capture is that trace
-- under the default kernel rules. The other ranks (several captures, whose GPU time pools
-- in a step's window; traces ingested before `step_time` existed; other rules) are measured
-- here in ordered passes over their kernels, the same figures.
--
-- Reads: traces, cpu_ops, kernels, runtime, gpu_intervals, _rank_class_intervals, _step_time
--
-- Columns:
--   run, phase, rank       partition
--   trace_id               the trace holding the step
--   event_index            the step's event in cpu_ops
--   step                   its name (ProfilerStep#N)
--   start_ns, end_ns       the step on the CPU, ns
--   dur_ns                 end_ns - start_ns
--   kernels                GPU work launched in the step (its launch, else its start, inside)
--   gpu_busy_ns            GPU activity in the step, ns
--   host_wait_ns           the GPU idle with nothing launched waiting, ns
--   empty_queue_ns         nothing launched waiting to start on any stream, ns
--   exposed_comm_ns        communication with no computation beside it, ns
--   gpu_busy_share         gpu_busy_ns / dur_ns
--   host_wait_share        host_wait_ns / dur_ns
--   empty_queue_share      empty_queue_ns / dur_ns
--   exposed_comm_share     exposed_comm_ns / dur_ns
--   short_kernel_share     share of `kernels` with a launch that ran shorter than it (NULL
--                          when none has a launch)
--   verdict                gpu_bound, host_bound, communication_bound or mixed
CREATE OR REPLACE VIEW step_bottleneck AS
WITH captures AS (
  SELECT run, phase, rank, count(*) AS traces
  FROM traces
  GROUP BY run, phase, rank
),
stored_ranks AS (
  SELECT DISTINCT s.run, s.phase, s.rank
  FROM _step_time AS s
  JOIN captures AS c ON c.run = s.run AND c.phase = s.phase AND c.rank = s.rank
  WHERE c.traces = 1
),
live_ranks AS (
  SELECT c.run, c.phase, c.rank
  FROM captures AS c
  LEFT JOIN stored_ranks AS s ON s.run = c.run AND s.phase = c.phase AND s.rank = c.rank
  WHERE s.rank IS NULL
),
steps AS (
  SELECT o.run, o.phase, o.rank, o.trace_id, o.event_index, o.name AS step,
         o.ts_ns AS start_ns, o.ts_ns + o.dur_ns AS end_ns
  FROM cpu_ops AS o
  JOIN live_ranks AS r ON r.run = o.run AND r.phase = o.phase AND r.rank = o.rank
  WHERE o.name LIKE 'ProfilerStep#%' AND o.dur_ns > 0
),
step_ranks AS (
  SELECT DISTINCT run, phase, rank FROM steps
),
-- _launch_calls' rule (the earliest call of a correlation id), over the ranks measured here
-- only: the engine does not carry the rank restriction into the helper's grouping, which
-- would group every runtime call of the warehouse.
launches AS (
  SELECT c.run, c.phase, c.rank, c.trace_id, c.correlation, min(c.ts_ns) AS launch_ts_ns,
         min_by(c.dur_ns, c.ts_ns) AS launch_dur_ns
  FROM runtime AS c
  JOIN step_ranks AS r ON r.run = c.run AND r.phase = c.phase AND r.rank = c.rank
  WHERE c.correlation IS NOT NULL AND c.correlation <> 0
  GROUP BY c.run, c.phase, c.rank, c.trace_id, c.correlation
),
work AS (
  SELECT k.run, k.phase, k.rank, k.trace_id, k.ts_ns AS start_ns, k.ts_ns + k.dur_ns AS end_ns,
         l.launch_ts_ns, least(coalesce(l.launch_ts_ns, k.ts_ns), k.ts_ns) AS fed_ns,
         CASE WHEN k.dur_ns < l.launch_dur_ns THEN 1 ELSE 0 END AS short
  FROM kernels AS k
  JOIN step_ranks AS r ON r.run = k.run AND r.phase = k.phase AND r.rank = k.rank
  LEFT JOIN launches AS l
    ON l.run = k.run AND l.phase = k.phase AND l.rank = k.rank AND l.trace_id = k.trace_id
   AND l.correlation = k.correlation
  WHERE k.category IN ('kernel', 'gpu_memcpy', 'gpu_memset', 'mtia_ccp_events')
    AND k.dur_ns IS NOT NULL
),
work_reach AS (
  SELECT *,
         max(end_ns) OVER (
           PARTITION BY run, phase, rank, trace_id ORDER BY fed_ns, end_ns
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS fed_until,
         max(CASE WHEN launch_ts_ns < start_ns THEN start_ns END) OVER (
           PARTITION BY run, phase, rank, trace_id ORDER BY fed_ns, end_ns
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS pending_until
  FROM work
),
class_reach AS (
  SELECT *,
         max(end_ns) OVER (
           PARTITION BY run, phase, rank ORDER BY start_ns, end_ns
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS any_until,
         max(CASE WHEN side = 'second' THEN end_ns END) OVER (
           PARTITION BY run, phase, rank ORDER BY start_ns, end_ns
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS second_until
  FROM (SELECT i.*
        FROM _rank_class_intervals AS i
        JOIN step_ranks AS r ON r.run = i.run AND r.phase = i.phase AND r.rank = i.rank) AS c
),
-- Disjoint pieces of each union (each interval's part past the reach of those before it).
-- A union's length before time t is then the pieces' running length minus the part of the
-- last one past t: measured at each step's start and end in one ordered pass per trace (per
-- rank for the classes), with launches counted the same way, instead of range joins of
-- millions of pieces with the steps.
trace_marks AS (
  SELECT trace_id, greatest(fed_ns, coalesce(fed_until, fed_ns)) AS t, 1 AS tie,
         'fed' AS kind, end_ns, 0 AS launched, 0 AS with_launch, 0 AS short
  FROM work_reach
  WHERE end_ns > greatest(fed_ns, coalesce(fed_until, fed_ns))
  UNION ALL
  SELECT trace_id, greatest(launch_ts_ns, coalesce(pending_until, launch_ts_ns)), 1,
         'pending', start_ns, 0, 0, 0
  FROM work_reach
  WHERE launch_ts_ns < start_ns
    AND start_ns > greatest(launch_ts_ns, coalesce(pending_until, launch_ts_ns))
  UNION ALL
  SELECT i.trace_id, i.start_ns, 1, 'busy', i.end_ns, 0, 0, 0
  FROM gpu_intervals AS i
  JOIN step_ranks AS r ON r.run = i.run AND r.phase = i.phase AND r.rank = i.rank
  WHERE i.kind = 'busy' AND i.end_ns > i.start_ns
  UNION ALL
  SELECT trace_id, coalesce(launch_ts_ns, start_ns), 1, 'launch', CAST(NULL AS BIGINT), 1,
         CASE WHEN launch_ts_ns IS NULL THEN 0 ELSE 1 END,
         CASE WHEN launch_ts_ns IS NULL THEN 0 ELSE short END
  FROM work
  UNION ALL
  SELECT trace_id, start_ns, 0, 'step', CAST(NULL AS BIGINT), 0, 0, 0 FROM steps
  UNION ALL
  SELECT trace_id, end_ns, 0, 'step', CAST(NULL AS BIGINT), 0, 0, 0 FROM steps
),
trace_running AS (
  SELECT trace_id, t, kind,
         sum(CASE WHEN kind = 'fed' THEN end_ns - t ELSE 0 END) OVER running AS fed_length,
         max(CASE WHEN kind = 'fed' THEN end_ns END) OVER running AS fed_reach,
         sum(CASE WHEN kind = 'pending' THEN end_ns - t ELSE 0 END) OVER running
           AS pending_length,
         max(CASE WHEN kind = 'pending' THEN end_ns END) OVER running AS pending_reach,
         sum(CASE WHEN kind = 'busy' THEN end_ns - t ELSE 0 END) OVER running AS busy_length,
         max(CASE WHEN kind = 'busy' THEN end_ns END) OVER running AS busy_reach,
         sum(launched) OVER running AS launched,
         sum(with_launch) OVER running AS with_launch,
         sum(short) OVER running AS short
  FROM trace_marks
  WINDOW running AS (PARTITION BY trace_id ORDER BY t, tie ROWS UNBOUNDED PRECEDING)
),
trace_at AS (
  SELECT DISTINCT trace_id, t,
         fed_length - greatest(0, coalesce(fed_reach, t) - t) AS fed_before,
         pending_length - greatest(0, coalesce(pending_reach, t) - t) AS pending_before,
         busy_length - greatest(0, coalesce(busy_reach, t) - t) AS busy_before,
         launched, with_launch, short
  FROM trace_running
  WHERE kind = 'step'
),
rank_marks AS (
  SELECT run, phase, rank, greatest(start_ns, coalesce(any_until, start_ns)) AS t, 1 AS tie,
         'either' AS kind, end_ns
  FROM class_reach
  WHERE end_ns > greatest(start_ns, coalesce(any_until, start_ns))
  UNION ALL
  SELECT run, phase, rank, greatest(start_ns, coalesce(second_until, start_ns)), 1,
         'computation', end_ns
  FROM class_reach
  WHERE side = 'second' AND end_ns > greatest(start_ns, coalesce(second_until, start_ns))
  UNION ALL
  SELECT run, phase, rank, start_ns, 0, 'step', CAST(NULL AS BIGINT) FROM steps
  UNION ALL
  SELECT run, phase, rank, end_ns, 0, 'step', CAST(NULL AS BIGINT) FROM steps
),
rank_running AS (
  SELECT run, phase, rank, t, kind,
         sum(CASE WHEN kind = 'either' THEN end_ns - t ELSE 0 END) OVER running
           AS either_length,
         max(CASE WHEN kind = 'either' THEN end_ns END) OVER running AS either_reach,
         sum(CASE WHEN kind = 'computation' THEN end_ns - t ELSE 0 END) OVER running
           AS computation_length,
         max(CASE WHEN kind = 'computation' THEN end_ns END) OVER running
           AS computation_reach
  FROM rank_marks
  WINDOW running AS (PARTITION BY run, phase, rank ORDER BY t, tie ROWS UNBOUNDED PRECEDING)
),
rank_at AS (
  SELECT DISTINCT run, phase, rank, t,
         either_length - greatest(0, coalesce(either_reach, t) - t)
         - (computation_length - greatest(0, coalesce(computation_reach, t) - t))
           AS exposed_before
  FROM rank_running
  WHERE kind = 'step'
),
figures AS (
  SELECT s.run, s.phase, s.rank, s.trace_id, s.event_index, s.step, s.start_ns, s.end_ns,
         s.end_ns - s.start_ns AS dur_ns,
         CAST(b.launched - a.launched AS BIGINT) AS kernels,
         CAST(b.busy_before - a.busy_before AS BIGINT) AS gpu_busy_ns,
         CAST(s.end_ns - s.start_ns - (b.fed_before - a.fed_before) AS BIGINT) AS host_wait_ns,
         CAST(s.end_ns - s.start_ns - (b.pending_before - a.pending_before) AS BIGINT)
           AS empty_queue_ns,
         CAST(coalesce(rb.exposed_before - ra.exposed_before, 0) AS BIGINT) AS exposed_comm_ns,
         CASE WHEN b.with_launch > a.with_launch
              THEN CAST(b.short - a.short AS DOUBLE) / (b.with_launch - a.with_launch)
         END AS short_kernel_share
  FROM steps AS s
  JOIN trace_at AS a ON a.trace_id = s.trace_id AND a.t = s.start_ns
  JOIN trace_at AS b ON b.trace_id = s.trace_id AND b.t = s.end_ns
  LEFT JOIN rank_at AS ra
    ON ra.run = s.run AND ra.phase = s.phase AND ra.rank = s.rank AND ra.t = s.start_ns
  LEFT JOIN rank_at AS rb
    ON rb.run = s.run AND rb.phase = s.phase AND rb.rank = s.rank AND rb.t = s.end_ns
  UNION ALL
  SELECT t.run, t.phase, t.rank, t.trace_id, t.event_index, t.step, t.start_ns, t.end_ns,
         t.end_ns - t.start_ns AS dur_ns, t.kernels, t.gpu_busy_ns, t.host_wait_ns,
         t.empty_queue_ns, t.exposed_comm_ns,
         CASE WHEN t.kernels_with_launch > 0
              THEN CAST(t.short_kernels AS DOUBLE) / t.kernels_with_launch
         END AS short_kernel_share
  FROM _step_time AS t
  JOIN stored_ranks AS r ON r.run = t.run AND r.phase = t.phase AND r.rank = t.rank
),
shares AS (
  SELECT *,
         CAST(gpu_busy_ns AS DOUBLE) / dur_ns AS gpu_busy_share,
         CAST(host_wait_ns AS DOUBLE) / dur_ns AS host_wait_share,
         CAST(empty_queue_ns AS DOUBLE) / dur_ns AS empty_queue_share,
         CAST(exposed_comm_ns AS DOUBLE) / dur_ns AS exposed_comm_share
  FROM figures
)
SELECT run, phase, rank, trace_id, event_index, step, start_ns, end_ns, dur_ns, kernels,
       gpu_busy_ns, host_wait_ns, empty_queue_ns, exposed_comm_ns, gpu_busy_share,
       host_wait_share, empty_queue_share, exposed_comm_share, short_kernel_share,
       CASE
         WHEN host_wait_share >= 0.30 AND host_wait_share >= exposed_comm_share
           THEN 'host_bound'
         WHEN exposed_comm_share >= 0.30 THEN 'communication_bound'
         WHEN gpu_busy_share >= 0.80 THEN 'gpu_bound'
         ELSE 'mixed'
       END AS verdict
FROM shares;
