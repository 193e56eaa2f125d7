-- Events per run, phase, rank, relation and file, counted from the tables themselves.
--
-- For one ingested file, the sum of `events` over the relations equals the number of events
-- in its traceEvents (`traces.events`): every input event lands in exactly one table.
--
-- Reads: counters, cpu_ops, flows, instants, kernels, metadata, other_events, runtime
--
-- Columns:
--   run, phase, rank   partition of the trace
--   relation           table name: kernels, cpu_ops, runtime, flows, counters, instants,
--                      metadata or other_events
--   events             rows of that table from that file
--   trace_id           the ingested file (`traces.trace_id`)
CREATE OR REPLACE VIEW event_counts AS
SELECT run, phase, rank, 'kernels' AS relation, count(*) AS events, trace_id
FROM kernels GROUP BY run, phase, rank, trace_id
UNION ALL
SELECT run, phase, rank, 'cpu_ops', count(*), trace_id FROM cpu_ops GROUP BY run, phase, rank, trace_id
UNION ALL
SELECT run, phase, rank, 'runtime', count(*), trace_id FROM runtime GROUP BY run, phase, rank, trace_id
UNION ALL
SELECT run, phase, rank, 'flows', count(*), trace_id FROM flows GROUP BY run, phase, rank, trace_id
UNION ALL
SELECT run, phase, rank, 'counters', count(*), trace_id FROM counters GROUP BY run, phase, rank, trace_id
UNION ALL
SELECT run, phase, rank, 'instants', count(*), trace_id FROM instants GROUP BY run, phase, rank, trace_id
UNION ALL
SELECT run, phase, rank, 'metadata', count(*), trace_id FROM metadata GROUP BY run, phase, rank, trace_id
UNION ALL
SELECT run, phase, rank, 'other_events', count(*), trace_id FROM other_events
GROUP BY run, phase, rank, trace_id;
