-- One collective as all the ranks of its group ran it: who was there, how long the transfer
-- took, who arrived last and how fast the data moved.
-- The calls of `collective_calls` are matched by (run, phase, capture_group, process_group,
-- seq): the seq-th call of the group on every rank. The instance is `matched` when every rank
-- of the group is there once, all ran the same collective and (but for all_to_all and
-- send_recv, whose ranks may move different amounts) the same msg_bytes; otherwise
-- `unmatched_reason` says why and the cross-rank figures are NULL. A rank that missed a call
-- shifts its later calls by one seq: those instances then disagree on collective or size, or
-- lack the rank, and are not matched, rather than matched wrongly. Collectives without sizes
-- (DeepEP) are matched by op and order with bytes NULL.
-- Latency is the shortest duration over the ranks: the transfer itself, once the last rank
-- arrived (TraceLens' definition). Bandwidths are in GB/s with GB = 10^9 bytes (nccl-tests'
-- unit; bytes per ns): algbw = msg_bytes / latency_ns; busbw = algbw * factor, nccl-tests'
-- factors for group size n: all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all
-- (n-1)/n; broadcast, reduce, send_recv 1; other collectives (DeepEP's ops, gather,
-- scatter) NULL. A group of one moves nothing between ranks: its bandwidths are NULL.
--
-- Reads: _collective_matches
--
-- Columns:
--   run, phase          partition (the instance spans ranks)
--   capture_group       the capture group of the run and phase (see _collective_captures)
--   process_group       process group of the calls
--   seq                 position of the call in the process group on each rank
--   collective          the collective (the least of them when the ranks disagree)
--   algorithm           NCCL algorithm (the least over ranks), else NULL
--   protocol            NCCL protocol (the least over ranks), else NULL
--   dtype               dtype (the least over ranks), else NULL
--   group_size          ranks in the process group (the largest over ranks)
--   ranks               ranks that have the call
--   missing_ranks       group_size - ranks when positive, else 0
--   matched             true when every rank of the group is there with the same collective
--                       and size (see above)
--   unmatched_reason    missing ranks, extra ranks, group size unknown, collectives differ,
--                       sizes differ; NULL when matched
--   msg_bytes           bytes of the collective (the largest over ranks), NULL when unknown
--   total_bytes         msg_bytes summed over the ranks, bytes (all_to_all-v: everything
--                       sent), NULL when a rank's is unknown
--   first_start_ns      the earliest start over the ranks, ns
--   last_start_ns       the latest start: when the last rank arrived, ns
--   latency_ns          the shortest duration over the ranks, ns
--   arrival_skew_ns     last_start_ns - first_start_ns, ns
--   end_skew_ns         the latest end minus the earliest end, ns
--   last_rank           the rank that arrived last (the lowest of a tie): everyone waited
--                       for it
--   mean_wait_ns        mean over the ranks of last_start_ns - the rank's start (DOUBLE), ns
--   total_wait_ns       the waits summed over the ranks: the time the last rank cost the
--                       others, ns
--   rank_dur_ns         the calls' durations summed over the ranks: GPU time spent in it, ns
--   algbw_gbps          msg_bytes / latency_ns, GB/s
--   busbw_gbps          algbw_gbps times the collective's factor, GB/s
--   throughput_gbps     total_bytes / latency_ns: all ranks' bytes (all_to_all), GB/s
--   size_imbalance      all_to_all-v: the largest split over the ranks divided by the mean
--                       split (1 is even), NULL without splits
CREATE OR REPLACE VIEW collective_instances AS
SELECT run, phase, capture_group, process_group, seq, collective, algorithm, protocol, dtype,
       group_size, ranks, missing_ranks, matched, unmatched_reason, msg_bytes, total_bytes,
       first_start_ns, last_start_ns, latency_ns, arrival_skew_ns, end_skew_ns, last_rank,
       mean_wait_ns, total_wait_ns, rank_dur_ns, algbw_gbps, busbw_gbps, throughput_gbps,
       size_imbalance
FROM _collective_matches
WHERE first_call;
