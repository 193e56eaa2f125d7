-- Overlap between each pair of GPU streams of a rank: how long both are busy at once
-- (communication and computation kernels).
--
-- Reads: _overlap_windows
--
-- Columns:
--   run, phase, rank     partition
--   first_stream         the lower-numbered stream
--   second_stream        the other stream
--   first_busy_ns        union of the first stream's kernels, ns
--   second_busy_ns       union of the second stream's kernels, ns
--   overlap_ns           time both are busy, ns
--   overlap_ratio        overlap_ns / the smaller of the two busy times
CREATE OR REPLACE VIEW overlap_by_stream AS
SELECT
  run, phase, rank,
  CAST(split_part(window_name, ',', 1) AS BIGINT) AS first_stream,
  CAST(split_part(window_name, ',', 2) AS BIGINT) AS second_stream,
  first_ns AS first_busy_ns, second_ns AS second_busy_ns, overlap_ns,
  CASE WHEN least(first_ns, second_ns) > 0
       THEN CAST(overlap_ns AS DOUBLE) / least(first_ns, second_ns) END AS overlap_ratio
FROM _overlap_windows
WHERE scope = 'stream_pair';
