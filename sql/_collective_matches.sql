-- Every collective call with the figures of its instance (the seq-th call of its group on
-- every rank): what collective_instances keeps one row of per instance and collective_waits
-- shows per call. Computed with window aggregates over the instance, so that both read the
-- calls once (a join of the calls to their own grouping had Spark plan them twice). The
-- rules are collective_instances': see there.
--
-- Reads: _collective_kernels
--
-- Columns:
--   run, phase, rank    partition
--   trace_id            the capture of the call
--   event_index         the call's kernel event in its trace
--   capture_group       the capture group of the run and phase
--   process_group       process group of the call
--   seq                 position of the call in its process group
--   first_call          true on one call of each instance (the lowest rank's first)
--   call_collective     this call's collective
--   call_msg_bytes      this call's size, bytes (NULL when unknown)
--   start_ns            this call's start, ns
--   dur_ns              this call's duration, ns
--   collective ... size_imbalance   the instance's, as collective_instances documents them
CREATE OR REPLACE VIEW _collective_matches AS
WITH calls AS NOT MATERIALIZED (
  SELECT run, phase, rank, trace_id, event_index, capture_group, process_group, seq,
         collective, algorithm,
         protocol, dtype, group_size, msg_bytes, split_max, split_mean, start_ns, dur_ns,
         end_ns,
         max(start_ns) OVER (PARTITION BY run, phase, capture_group, process_group, seq)
           AS last_start,
         count(*) OVER (PARTITION BY run, phase, capture_group, process_group, seq, rank)
           AS rank_calls
  FROM _collective_kernels
),
grouped AS NOT MATERIALIZED (
  SELECT run, phase, rank, trace_id, event_index, capture_group, process_group, seq,
         start_ns, dur_ns, collective AS call_collective, msg_bytes AS call_msg_bytes,
         row_number() OVER (PARTITION BY run, phase, capture_group, process_group, seq
                            ORDER BY rank, start_ns) = 1 AS first_call,
         min(collective) OVER instance AS collective,
         max(collective) OVER instance AS greatest_collective,
         min(algorithm) OVER instance AS algorithm,
         min(protocol) OVER instance AS protocol,
         min(dtype) OVER instance AS dtype,
         max(group_size) OVER instance AS group_size,
         count(*) OVER instance AS ranks,
         max(rank_calls) OVER instance AS calls_of_a_rank,
         min(coalesce(CAST(msg_bytes AS VARCHAR), 'none')) OVER instance AS least_size,
         max(coalesce(CAST(msg_bytes AS VARCHAR), 'none')) OVER instance AS greatest_size,
         max(msg_bytes) OVER instance AS msg_bytes,
         CASE WHEN count(msg_bytes) OVER instance = count(*) OVER instance
              THEN CAST(sum(msg_bytes) OVER instance AS BIGINT) END AS total_bytes,
         max(split_max) OVER instance AS split_max,
         -- over exact decimals: a double sum's last bit depends on the order of the rows
         CAST(avg(CAST(split_mean AS DECIMAL(38, 9))) OVER instance AS DOUBLE) AS split_mean,
         min(start_ns) OVER instance AS first_start_ns,
         last_start AS last_start_ns,
         min(dur_ns) OVER instance AS shortest_ns,
         max(end_ns) OVER instance - min(end_ns) OVER instance AS end_skew,
         min(CASE WHEN start_ns = last_start THEN rank END) OVER instance AS latest_rank,
         avg(CAST(last_start - start_ns AS DOUBLE)) OVER instance AS mean_wait,
         CAST(sum(last_start - start_ns) OVER instance AS BIGINT) AS waits,
         CAST(sum(dur_ns) OVER instance AS BIGINT) AS rank_dur_ns
  FROM calls
  WINDOW instance AS (PARTITION BY run, phase, capture_group, process_group, seq)
),
judged AS (
  SELECT *,
         CASE
           WHEN group_size IS NULL THEN 'group size unknown'
           WHEN calls_of_a_rank > 1 OR ranks > group_size THEN 'extra ranks'
           WHEN ranks < group_size THEN 'missing ranks'
           WHEN collective <> greatest_collective THEN 'collectives differ'
           WHEN least_size <> greatest_size AND collective NOT IN ('all_to_all', 'send_recv')
             THEN 'sizes differ'
         END AS unmatched_reason,
         CASE
           WHEN group_size < 2 THEN NULL
           WHEN collective = 'all_reduce' THEN 2.0 * (group_size - 1) / group_size
           WHEN collective IN ('all_gather', 'reduce_scatter', 'all_to_all')
             THEN 1.0 * (group_size - 1) / group_size
           WHEN collective IN ('broadcast', 'reduce', 'send_recv') THEN 1.0
         END AS factor
  FROM grouped
)
SELECT run, phase, rank, trace_id, event_index, capture_group, process_group, seq,
       first_call, call_collective,
       call_msg_bytes, start_ns, dur_ns, collective, algorithm, protocol, dtype, group_size,
       ranks,
       CASE WHEN group_size > ranks THEN group_size - ranks ELSE 0 END AS missing_ranks,
       unmatched_reason IS NULL AS matched, unmatched_reason,
       msg_bytes, total_bytes, first_start_ns, last_start_ns,
       CASE WHEN unmatched_reason IS NULL THEN shortest_ns END AS latency_ns,
       CASE WHEN unmatched_reason IS NULL THEN last_start_ns - first_start_ns END
         AS arrival_skew_ns,
       CASE WHEN unmatched_reason IS NULL THEN end_skew END AS end_skew_ns,
       CASE WHEN unmatched_reason IS NULL THEN latest_rank END AS last_rank,
       CASE WHEN unmatched_reason IS NULL THEN mean_wait END AS mean_wait_ns,
       CASE WHEN unmatched_reason IS NULL THEN waits END AS total_wait_ns,
       rank_dur_ns,
       CASE WHEN unmatched_reason IS NULL AND group_size > 1 AND shortest_ns > 0
            THEN CAST(msg_bytes AS DOUBLE) / shortest_ns END AS algbw_gbps,
       CASE WHEN unmatched_reason IS NULL AND shortest_ns > 0
            THEN CAST(msg_bytes AS DOUBLE) / shortest_ns * factor END AS busbw_gbps,
       CASE WHEN unmatched_reason IS NULL AND group_size > 1 AND shortest_ns > 0
             AND collective = 'all_to_all'
            THEN CAST(total_bytes AS DOUBLE) / shortest_ns END AS throughput_gbps,
       CASE WHEN unmatched_reason IS NULL AND collective = 'all_to_all' AND split_mean > 0
            THEN split_max / split_mean END AS size_imbalance
FROM judged;
