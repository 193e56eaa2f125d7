-- Frequent kernel sequences: how often each run of three consecutive kernels on a GPU stream
-- repeats, per run, phase, rank and stream (trigrams of kernel short names).
--
-- Every kernel (category kernel) starts a sequence with the two kernels that start after it
-- on its stream, in order of start, then event order, within one capture (a capture's last
-- two kernels on a stream start none; a rank's captures add up). Kernels are named by
-- `kernel_classes.short_name`, so launches of one kernel with other parameters are one name.
-- Order by occurrences to find the sequences a step repeats (a fusion candidate), by
-- total_ns for the ones that cost the most. HTA's frequent CUDA kernel sequences look for
-- patterns in the kernels one operator launched; these are the streams' own n-grams, of every
-- kernel, whatever launched it.
--
-- Reads: kernel_classes
--
-- Columns:
--   run, phase, rank   partition
--   stream             GPU stream
--   first_kernel, second_kernel, third_kernel   the three kernels' short names, in order
--   occurrences        times the sequence starts on the stream
--   total_ns           the three kernels' durations summed over the occurrences, ns
--   first_ts_ns        start of its first occurrence, ns
CREATE OR REPLACE VIEW kernel_sequences AS
WITH ordered AS (
  SELECT run, phase, rank, stream, ts_ns, short_name AS first_kernel,
         lead(short_name, 1) OVER stream_order AS second_kernel,
         lead(short_name, 2) OVER stream_order AS third_kernel,
         dur_ns + lead(dur_ns, 1) OVER stream_order + lead(dur_ns, 2) OVER stream_order
           AS sequence_ns
  FROM kernel_classes
  WHERE category = 'kernel' AND stream IS NOT NULL
  WINDOW stream_order AS (PARTITION BY run, phase, rank, trace_id, stream
                          ORDER BY ts_ns, event_index)
)
SELECT run, phase, rank, stream, first_kernel, second_kernel, third_kernel,
       count(*) AS occurrences,
       CAST(sum(sequence_ns) AS BIGINT) AS total_ns,
       min(ts_ns) AS first_ts_ns
FROM ordered
WHERE third_kernel IS NOT NULL
GROUP BY run, phase, rank, stream, first_kernel, second_kernel, third_kernel;
