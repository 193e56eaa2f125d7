-- Union lengths of the two sides of `_overlap_intervals`, per window: how long the first side,
-- the second side, and both together cover, and their intersection. Helper of the overlap
-- views.
--
-- Steps and annotations are measured at ingest (`_window_time`); stream pairs span a rank's
-- traces, and are measured here (`_overlap_lengths`).
--
-- Reads: _window_time, _overlap_lengths
--
-- Columns:
--   run, phase, rank   partition
--   scope              step, annotation or stream_pair
--   trace_id           the trace holding the window (NULL for stream pairs)
--   window_index       the window's event in cpu_ops (NULL for stream pairs)
--   window_name        the step or annotation name; the two streams, comma-separated
--   window_start_ns, window_end_ns   the window on the CPU, ns (NULL for stream pairs)
--   first_ns           length of the union of the first side
--   second_ns          length of the union of the second side
--   union_ns           length of the union of both
--   overlap_ns         length of their intersection: first_ns + second_ns - union_ns
--   export_command     the `tracewh export` command that writes the window's events as
--                      Chrome-trace JSON for Perfetto (NULL for stream pairs, which have no
--                      window)
CREATE OR REPLACE VIEW _overlap_windows AS
WITH lengths AS (
  SELECT * FROM _window_time
  UNION ALL
  SELECT * FROM _overlap_lengths WHERE scope = 'stream_pair'
)
SELECT *, first_ns + second_ns - union_ns AS overlap_ns,
       'tracewh export ' || run || ' --rank ' || CAST(rank AS VARCHAR) || ' --phase ' || phase
         || ' --trace ' || trace_id || ' --from-ns ' || CAST(window_start_ns AS VARCHAR)
         || ' --to-ns ' || CAST(window_end_ns AS VARCHAR) || ' --out ' || run || '-rank'
         || CAST(rank AS VARCHAR) || '-' || CAST(window_start_ns AS VARCHAR) || '.json.gz'
         AS export_command
FROM lengths;
