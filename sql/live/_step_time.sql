-- _step_time when the effective kernel rules are not the defaults: the exposed
-- communication measured at ingest does not hold, so no step is offered and
-- `step_bottleneck` measures every step from the live-classified kernels.
--
-- Reads: step_time
--
-- Columns:
--   run, phase, rank       partition
--   trace_id               the trace
--   event_index            the step's event in cpu_ops
--   step                   its name (ProfilerStep#N)
--   start_ns, end_ns       the step on the CPU, ns
--   kernels                GPU work launched in the step
--   kernels_with_launch    those with a launch in the trace
--   short_kernels          those that ran shorter than their launch call
--   gpu_busy_ns            GPU activity in the step, ns
--   host_wait_ns           the GPU idle with nothing launched waiting, ns
--   empty_queue_ns         nothing launched waiting to start on any stream, ns
--   exposed_comm_ns        communication with no computation beside it, ns
CREATE OR REPLACE VIEW _step_time AS
SELECT run, phase, rank, trace_id, event_index, step, start_ns, end_ns, kernels,
       kernels_with_launch, short_kernels, gpu_busy_ns, host_wait_ns, empty_queue_ns,
       exposed_comm_ns
FROM step_time
WHERE false;
