-- The host call tree: each cpu_ops and runtime event with its parent, the innermost event
-- enclosing it on the same trace, process and thread.
--
-- Rules (see _host_layers, layer `all`): events ordered by start, longer first, then
-- event_index; equal start: the longer one is the parent; an event ending where another
-- starts does not enclose it (a zero-duration event at a parent's end is not its child);
-- zero-duration events have no children; events that do not nest are flagged
-- partial_overlap. Never across trace_id.
--
-- Reads: _host_layers
--
-- Columns:
--   run, phase, rank    partition
--   trace_id            the trace
--   event_index         the event (unique per trace across cpu_ops and runtime)
--   source              cpu_ops or runtime
--   cat                 its category
--   name                its name
--   pid, tid            its process and thread
--   ts_ns               start, ns
--   dur_ns              duration, ns (NULL when the event has none)
--   parent_event_index  the innermost event enclosing it (NULL at top level)
--   depth               number of its ancestors (0: top level)
--   partial_overlap     true when it ends after its parent or starts once its parent ended
CREATE OR REPLACE VIEW _host_tree AS
SELECT run, phase, rank, trace_id, event_index, source, cat, name, pid, tid, ts_ns, dur_ns,
       parent_event_index, depth, partial_overlap
FROM _host_layers
WHERE layer = 'all';
