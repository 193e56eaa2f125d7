-- Every ancestor of the members of the cpu_op layer that launched GPU activity and of every
-- nn.Module frame: one row per (event, enclosing member), for the views that add GPU time
-- up the tree (total time of an op, a module's path).
--
-- The ancestor at level k of an event at depth d (k < d) is the last member of level k
-- started before it on its thread (_host_layers order); in a thread whose events nest, that
-- is the one enclosing it. Built once per trace at ingest (`call_ancestors`,
-- ingest/call_tree.py); a warehouse created before call_ancestors existed replaces this view
-- by sql/live/_host_ancestors.sql, which computes the same rows at query time.
--
-- Reads: call_ancestors
--
-- Columns:
--   layer                 cpu_op or module
--   run, phase, rank      partition
--   trace_id              the trace
--   event_index           the event (a cpu_op or an nn.Module python_function)
--   level                 the ancestor's depth (0: outermost)
--   ancestor_event_index  the ancestor member
CREATE OR REPLACE VIEW _host_ancestors AS
SELECT layer, run, phase, rank, trace_id, event_index, level, ancestor_event_index
FROM call_ancestors;
