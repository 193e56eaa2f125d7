-- One row per run: what it holds and how it was tagged.
--
-- Reads: traces
--
-- Columns:
--   run         run name
--   phases      distinct phases, comma-separated, sorted
--   ranks       number of distinct ranks
--   world_size  the job's world size (distributedInfo.world_size; the largest when the
--               traces differ), NULL when no trace says
--   ranks_missing  ranks 0..world_size-1 with no trace (NULL without a world size): a run
--               holding rank 0 of a 16-rank job has 15
--   files       number of ingested trace files
--   events      number of input events over all files
--   bytes       bytes of the trace files as stored
--   tags        the run's tags as a JSON object (from its first file)
--   first_seq   commit order of its first file (ingest order of runs)
--   ingested_at  when its first file was committed
CREATE OR REPLACE VIEW runs AS
WITH sizes AS (  -- joined on run, not a window over traces: a run filter reaches both scans
  SELECT run, max(world_size) AS run_world_size
  FROM traces
  GROUP BY run
)
SELECT
  t.run,
  array_to_string(list_sort(list_distinct(list(t.phase))), ',') AS phases,
  count(DISTINCT t.rank) AS ranks,
  max(s.run_world_size) AS world_size,
  CASE WHEN max(s.run_world_size) > 0
       THEN max(s.run_world_size)
            - count(DISTINCT CASE WHEN t.rank < s.run_world_size THEN t.rank END)
  END AS ranks_missing,
  count(*) AS files,
  CAST(sum(t.events) AS BIGINT) AS events,
  CAST(sum(t.bytes) AS BIGINT) AS bytes,
  arg_min(t.tags, t.ingest_seq) AS tags,
  min(t.ingest_seq) AS first_seq,
  min(t.ingested_at) AS ingested_at
FROM traces AS t
JOIN sizes AS s ON s.run = t.run
GROUP BY t.run;
