-- One row per run: what it holds and how it was tagged.
--
-- Reads: traces
--
-- Columns:
--   run         run name
--   phases      distinct phases, comma-separated, sorted
--   ranks       number of distinct ranks
--   files       number of ingested trace files
--   events      number of input events over all files
--   bytes       bytes of the trace files as stored
--   tags        the run's tags as a JSON object (from its first file)
--   first_seq   commit order of its first file (ingest order of runs)
--   ingested_at  when its first file was committed
CREATE OR REPLACE VIEW runs AS
SELECT
  run,
  array_to_string(list_sort(list_distinct(list(phase))), ',') AS phases,
  count(DISTINCT rank) AS ranks,
  count(*) AS files,
  CAST(sum(events) AS BIGINT) AS events,
  CAST(sum(bytes) AS BIGINT) AS bytes,
  arg_min(tags, ingest_seq) AS tags,
  min(ingest_seq) AS first_seq,
  min(ingested_at) AS ingested_at
FROM traces
GROUP BY run;
