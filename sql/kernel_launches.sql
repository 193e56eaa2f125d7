-- GPU activity joined to the runtime or driver call that launched it (same trace, same
-- correlation id). Kernels with no launch in the trace (GPU-only traces, gpu_user_annotation)
-- keep NULL launch columns. When several calls share the id, the earliest is the launch
-- (`_launch_calls`).
--
-- Reads: kernel_classes, _launch_calls
--
-- Columns:
--   run, phase, rank       partition
--   trace_id               the trace (16 hex digits; `traces.trace_id`)
--   event_index            position of the event in the file's traceEvents, from 0
--   name                   event name
--   category               Kineto category, lower-cased; old names mapped to new ones
--                          (Kernel->kernel, Memcpy->gpu_memcpy, Runtime->cuda_runtime,
--                          Operator->cpu_op)
--   name_id                64-bit hash of name (first 8 bytes of its BLAKE2b), a compact join key
--                          for per-name tables
--   ts_ns                  start, integer ns since the Unix epoch when the trace has absolute time
--   dur_ns                 duration in integer ns; NULL when the event has no dur
--   device                 GPU index (args.device, else pid)
--   stream                 GPU stream (args.stream, else tid)
--   correlation            CUPTI/roctracer correlation id linking to the launch
--   external_id            External id linking to the CPU op
--   grid_x, grid_y, grid_z   grid dimensions
--   block_x, block_y, block_z   block dimensions
--   registers_per_thread   registers per thread
--   shared_memory          shared memory per block, bytes
--   blocks_per_sm          blocks per SM
--   warps_per_sm           warps per SM
--   occupancy              estimated achieved occupancy, percent
--   bytes                  bytes moved (memcpy, memset)
--   bandwidth              memory bandwidth, GB/s (memcpy, memset)
--   pid                    process id as written (number or pseudo-track name)
--   tid                    thread id as written (number or pseudo-track name)
--   args                   the event's args as compact JSON text (numbers exact)
--   extra                  JSON object of top-level event keys tracewh does not model, else NULL
--   class                  communication, computation, memory, sync or other
--   collective             all_reduce, all_gather, reduce_scatter, all_to_all, send_recv,
--                          broadcast, dispatch, combine or other; NULL unless class is
--                          communication
--   short_name             the name without parameters and template arguments but the first
--                          template argument's name (kernels only; other categories keep their
--                          name), for grouping across builds: see `kernel_name_classes`
--   launch_name            the runtime/driver call (cudaLaunchKernel, hipLaunchKernel, ...)
--   launch_ts_ns           when the call started on the CPU, ns
--   launch_dur_ns          how long the call took on the CPU, ns
--   launch_tid             CPU thread that made the call
--   launch_latency_ns      from the call's start to the kernel's start on the GPU, ns
CREATE OR REPLACE VIEW kernel_launches AS
SELECT
  k.*,
  l.launch_name,
  l.launch_ts_ns,
  l.launch_dur_ns,
  l.launch_tid,
  k.ts_ns - l.launch_ts_ns AS launch_latency_ns
FROM kernel_classes AS k
LEFT JOIN _launch_calls AS l
  ON l.run = k.run AND l.phase = k.phase AND l.rank = k.rank AND l.trace_id = k.trace_id
 AND l.correlation = k.correlation;
