-- Each rank's part in each collective instance: how long it waited for the last rank, how long
-- the transfer took, and how much of its kernel was spent synchronising.
-- One row per call of `collective_calls`, with its instance's figures when the instance is
-- matched (`collective_instances`; both read `_collective_matches`), else NULL. TensorBoard's
-- split of a collective kernel: the transfer is the instance's latency (the shortest duration
-- over the ranks), the rest of the rank's kernel is synchronisation (waiting inside the kernel
-- for the others).
--
-- Reads: _collective_matches
--
-- Columns:
--   run, phase, rank   partition
--   capture_group      the capture group of the run and phase
--   process_group      process group of the call
--   seq                position of the call in its process group
--   collective         the call's collective
--   msg_bytes          the call's size, bytes (NULL when unknown)
--   matched            whether its instance is matched
--   start_ns           the call's start, ns
--   dur_ns             the call's duration, ns
--   wait_ns            the instance's last arrival minus this call's start, ns (0 for the
--                      last rank)
--   transfer_ns        the instance's latency, ns
--   sync_ns            dur_ns - transfer_ns: time in the kernel waiting for the others, ns
--   last_rank          the rank everyone waited for
--   busbw_gbps         the instance's bus bandwidth, GB/s (NULL where collective_instances
--                      has none)
--   rank_algbw_gbps    the algorithm bandwidth from this call alone: msg_bytes / dur_ns, GB/s,
--                      in a group of two or more ranks. What one rank allows when the others
--                      were not captured (busbw_gbps needs them all); its wait inside the
--                      kernel counts as transfer, so it is at most the instance's algbw_gbps
CREATE OR REPLACE VIEW collective_waits AS
SELECT run, phase, rank, capture_group, process_group, seq, call_collective AS collective,
       call_msg_bytes AS msg_bytes, matched, start_ns, dur_ns,
       CASE WHEN matched THEN last_start_ns - start_ns END AS wait_ns,
       latency_ns AS transfer_ns,
       dur_ns - latency_ns AS sync_ns,
       last_rank, busbw_gbps,
       CASE WHEN group_size > 1 AND dur_ns > 0
            THEN CAST(call_msg_bytes AS DOUBLE) / dur_ns END AS rank_algbw_gbps
FROM _collective_matches;
