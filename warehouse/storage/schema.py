"""The warehouse's tables: names, Arrow types and the documentation of every column.

One table per event family, so every input event lands in exactly one of them, plus `traces`
(one row per ingested file) and `devices`. Files hold standard Parquet types only (int64, int32,
double, string, list<string>, timestamp[us, UTC], boolean); the partition columns run, phase
and rank live in the Hive paths of `layout`, not in the files, as Spark, Trino and Hive expect.

This is the warehouse's central contract: every layer reads it, the ingest writes to it.
"""

from dataclasses import dataclass

import pyarrow as pa

# The `traces` columns copied from a trace's top-level keys of the same names (versions of
# the profiler's libraries): the ingest reads them, an export writes them back.
VERSION_KEYS = ("cupti_version", "cuda_runtime_version", "cuda_driver_version",
                "roctracer_version", "hip_runtime_version")

PARTITION_COLUMNS = (
    ("run", pa.string(), "run name (partition)"),
    ("phase", pa.string(), "phase: train, prefill, decode, ... or unknown (partition)"),
    ("rank", pa.int32(), "rank of the process that wrote the trace (partition)"),
)


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    doc: str


@dataclass(frozen=True)
class Table:
    name: str
    doc: str
    columns: tuple

    @property
    def schema(self):
        return pa.schema([(c.name, c.type) for c in self.columns])


def _c(name, typ, doc):
    return Column(name, typ, doc)


I64, I32, F64, STR = pa.int64(), pa.int32(), pa.float64(), pa.string()

_IDENTITY = (
    _c("trace_id", STR, "id of the ingested file (16 hex digits), as in traces"),
    _c("event_index", I64, "position of the event in the file's traceEvents, from 0"),
)
_NAMED = (
    _c("name", STR, "event name"),
    _c("category", STR, "Kineto category, lower-cased; old names mapped to new ones "
       "(Kernel->kernel, Memcpy->gpu_memcpy, Runtime->cuda_runtime, Operator->cpu_op)"),
)
_TIMES = (
    _c("ts_ns", I64, "start, integer ns since the Unix epoch when the trace has absolute time"),
    _c("dur_ns", I64, "duration in integer ns; NULL when the event has no dur"),
)
_THREAD = (
    _c("pid", STR, "process id as written (number or pseudo-track name)"),
    _c("tid", STR, "thread id as written (number or pseudo-track name)"),
)
_RAW = (
    _c("args", STR, "the event's args as compact JSON text (numbers exact)"),
    _c("extra", STR, "JSON object of top-level event keys tracewh does not model, else NULL"),
)

TABLES = {
    t.name: t
    for t in (
        Table("kernels", "GPU activity: kernels, memcpy, memset, GPU-side user annotations, sync "
                         "(and MTIA device activity, mtia_ccp_events)",
              _IDENTITY + _NAMED + (
                  _c("name_id", I64, "64-bit hash of name (first 8 bytes of its BLAKE2b), a "
                     "compact join key for per-name tables"),
              ) + _TIMES + (
                  _c("device", I32, "GPU index (args.device, else pid)"),
                  _c("stream", I64, "GPU stream (args.stream, else tid)"),
                  _c("correlation", I64, "CUPTI/roctracer correlation id linking to the launch"),
                  _c("external_id", I64, "External id linking to the CPU op"),
                  _c("grid_x", I32, "grid dimension x"),
                  _c("grid_y", I32, "grid dimension y"),
                  _c("grid_z", I32, "grid dimension z"),
                  _c("block_x", I32, "block dimension x"),
                  _c("block_y", I32, "block dimension y"),
                  _c("block_z", I32, "block dimension z"),
                  _c("registers_per_thread", I32, "registers per thread"),
                  _c("shared_memory", I64, "shared memory per block, bytes"),
                  _c("blocks_per_sm", F64, "blocks per SM"),
                  _c("warps_per_sm", F64, "warps per SM"),
                  _c("occupancy", F64, "estimated achieved occupancy, percent"),
                  _c("bytes", I64, "bytes moved (memcpy, memset)"),
                  _c("bandwidth", F64, "memory bandwidth, GB/s (memcpy, memset)"),
              ) + _THREAD + _RAW),
        Table("cpu_ops", "CPU-side spans: cpu_op, python_function, user_annotation, Trace, overhead",
              _IDENTITY + _NAMED + _TIMES + _THREAD + (
                  _c("external_id", I64, "External id linking to GPU activity"),
                  _c("sequence_number", I64, "autograd sequence number"),
              ) + _RAW),
        Table("runtime", "CUDA/HIP runtime and driver calls (cuda_runtime, cuda_driver; MTIA, XPU "
                         "and PrivateUse1 runtime and driver calls too)",
              _IDENTITY + _NAMED + _TIMES + _THREAD + (
                  _c("correlation", I64, "correlation id linking to the GPU activity it launched"),
                  _c("external_id", I64, "External id linking to the CPU op"),
                  _c("cbid", I32, "CUPTI callback id"),
              ) + _RAW),
        Table("flows", "flow events (ph s, t, f): ac2g, async_cpu_to_gpu, fwdbwd",
              _IDENTITY + _NAMED + (
                  _c("ph", STR, "s (start), t (step) or f (finish)"),
                  _c("id", STR, "flow id as written"),
                  _c("bp", STR, "binding point: e (enclosing slice) or NULL"),
                  _TIMES[0],
              ) + _THREAD + _RAW),
        Table("counters", "counter events (ph C); series values are in args",
              _IDENTITY + _NAMED + (_TIMES[0],) + _THREAD + _RAW),
        Table("instants", "instant events (ph i, I)",
              _IDENTITY + _NAMED + (
                  _TIMES[0],
                  _c("scope", STR, "s: g (global), p (process) or t (thread)"),
              ) + _THREAD + _RAW),
        Table("metadata", "process and thread metadata (ph M): names, labels, sort indices",
              _IDENTITY + _NAMED + (_TIMES[0],) + _THREAD + _RAW),
        Table("other_events", "catch-all: events of any other phase or an unknown category",
              _IDENTITY + _NAMED + (
                  _c("ph", STR, "event phase as written"),
              ) + _TIMES + _THREAD + _RAW),
        Table("traces", "one row per ingested file",
              (
                  _c("trace_id", STR, "id of this ingest of the file (16 random hex digits)"),
                  _c("sha256", STR, "sha256 of the file as stored"),
                  _c("source_path", STR, "absolute path of the file when ingested"),
                  _c("bytes", I64, "size of the file as stored"),
                  _c("events", I64, "number of events in traceEvents"),
                  _c("world_size", I32, "distributedInfo.world_size, else NULL"),
                  _c("device_names", pa.list_(STR), "distinct deviceProperties names"),
                  _c("schema_version", STR, "schemaVersion, else NULL (old Kineto)"),
                  _c("base_time_ns", I64, "baseTimeNanoseconds, else NULL"),
                  _c("trace_name", STR, "traceName"),
                  _c("cupti_version", STR, "cupti_version"),
                  _c("cuda_runtime_version", STR, "cuda_runtime_version"),
                  _c("cuda_driver_version", STR, "cuda_driver_version"),
                  _c("nccl_version", STR, "distributedInfo.nccl_version"),
                  _c("roctracer_version", STR, "roctracer_version"),
                  _c("hip_runtime_version", STR, "hip_runtime_version"),
                  _c("backend", STR, "distributedInfo.backend (nccl, gloo, ...)"),
                  _c("tags", STR, "JSON object of the run's --tag KEY=VALUE pairs"),
                  _c("warnings", pa.list_(STR), "tolerated oddities, counted"),
                  _c("secrets_redacted", I32, "values redacted as secrets (metadata and events)"),
                  _c("metadata", STR, "JSON object of the other top-level keys (redacted)"),
                  _c("ingested_at", pa.timestamp("us", tz="UTC"), "when the file was committed"),
                  _c("ingest_seq", I64, "commit order in this warehouse, from 1"),
              )),
        Table("kernel_names", "the distinct GPU activity names of each trace, by name_id: a small "
              "dimension table, so per-name work (classification, short names) reads it "
              "instead of millions of long names",
              (
                  _c("trace_id", STR, "the trace"),
                  _c("category", STR, "category of the activity"),
                  _c("name_id", I64, "as in kernels"),
                  _c("name", STR, "the full name"),
              )),
        Table("gpu_intervals", "each trace's GPU time as disjoint intervals, merged at ingest: "
              "kind busy (all activity but gpu_user_annotation), communication and "
              "computation (by the default rules); the rank-level views read these",
              (
                  _c("trace_id", STR, "the trace"),
                  _c("kind", STR, "busy, communication or computation"),
                  _c("start_ns", I64, "start of a merged interval, ns"),
                  _c("end_ns", I64, "its end (exclusive), ns"),
                  _c("rules", STR, "fingerprint of the rules that gave the classes"),
              )),
        Table("gpu_time", "each trace's GPU time as union lengths, measured at ingest from its "
              "gpu_intervals: the rank-level views sum these instead of re-merging intervals",
              (
                  _c("trace_id", STR, "the trace"),
                  _c("first_ns", I64, "start of its first GPU activity (not gpu_user_annotation), "
                     "ns; NULL if it has none"),
                  _c("last_ns", I64, "end of its last such activity, ns"),
                  _c("busy_ns", I64, "length of the union of that activity, ns"),
                  _c("comm_ns", I64, "length of the union of communication kernels, ns"),
                  _c("compute_ns", I64, "length of the union of computation kernels, ns"),
                  _c("comm_or_compute_ns", I64, "length of the union of both, ns"),
                  _c("rules", STR, "fingerprint of the rules that gave the classes"),
              )),
        Table("step_time", "each trace's ProfilerStep#N windows measured at ingest (see "
              "step_bottleneck, which reads these for a rank of one capture)",
              (
                  _c("trace_id", STR, "the trace"),
                  _c("event_index", I64, "the step's event in cpu_ops"),
                  _c("step", STR, "its name (ProfilerStep#N)"),
                  _c("start_ns", I64, "its start on the CPU, ns"),
                  _c("end_ns", I64, "its end, ns"),
                  _c("kernels", I64, "GPU work launched in it (its launch, else its start, "
                     "inside)"),
                  _c("kernels_with_launch", I64, "those with a launch in the trace"),
                  _c("short_kernels", I64, "those that ran shorter than their launch call"),
                  _c("gpu_busy_ns", I64, "GPU activity in it (busy union), ns"),
                  _c("host_wait_ns", I64, "the GPU idle with nothing launched waiting, ns"),
                  _c("empty_queue_ns", I64, "nothing launched waiting to start, ns"),
                  _c("exposed_comm_ns", I64, "communication with no computation beside it "
                     "(default rules), ns"),
                  _c("rules", STR, "fingerprint of the rules that gave the classes"),
              )),
        Table("window_time", "each trace's step and user-annotation windows with the "
              "communication and computation launched in them, measured at ingest (see "
              "overlap_by_annotation, which reads these)",
              (
                  _c("trace_id", STR, "the trace"),
                  _c("scope", STR, "step (ProfilerStep#N) or annotation"),
                  _c("event_index", I64, "the window's event in cpu_ops"),
                  _c("name", STR, "its name"),
                  _c("start_ns", I64, "its start on the CPU, ns"),
                  _c("end_ns", I64, "its end, ns"),
                  _c("comm_ns", I64, "union of the communication kernels launched in it "
                     "(default rules), ns"),
                  _c("compute_ns", I64, "union of the computation kernels launched in it, ns"),
                  _c("union_ns", I64, "union of both, ns"),
                  _c("rules", STR, "fingerprint of the rules that gave the classes"),
              )),
        Table("op_time", "each trace's host and GPU time per cpu_op name, measured at ingest "
              "(see op_stats, which adds these up)",
              (
                  _c("trace_id", STR, "the trace"),
                  _c("name", STR, "the op's name"),
                  _c("calls", I64, "its calls"),
                  _c("gpu_calls", I64, "calls that launched GPU activity themselves"),
                  _c("host_ns", I64, "sum of the calls' CPU durations, ns"),
                  _c("host_self_ns", I64, "host_ns less the CPU time of the events the calls "
                     "directly enclose, ns"),
                  _c("gpu_kernels", I64, "GPU activities the calls launched themselves"),
                  _c("gpu_self_ns", I64, "sum of those activities' durations, ns"),
                  _c("gpu_self_busy_ns", I64, "per call the union of their intervals, summed, "
                     "ns"),
                  _c("gpu_total_ns", I64, "gpu_self_ns of the calls and all the ops they "
                     "enclose, ns"),
                  _c("gpu_total_busy_ns", I64, "per call the union of those intervals, summed, "
                     "ns"),
                  _c("gpu_self_comm_ns", I64, "the part of gpu_self_ns in communication kernels "
                     "(default rules), ns"),
                  _c("backward_calls", I64, "backward calls linked to calls of this op"),
                  _c("backward_gpu_total_ns", I64, "their gpu_total_ns summed, ns"),
                  _c("backward_gpu_total_busy_ns", I64, "their gpu_total_busy_ns summed, ns"),
                  _c("rules", STR, "fingerprint of the rules that gave the classes"),
              )),
        Table("op_call_time", "each trace's cpu_op calls with their place in the call tree "
              "and the GPU time they launched, measured at ingest (see op_calls, which reads "
              "these)",
              (
                  _c("trace_id", STR, "the trace"),
                  _c("event_index", I64, "the call's event in cpu_ops"),
                  _c("name", STR, "the op's name"),
                  _c("pid", STR, "its process"),
                  _c("tid", STR, "its thread"),
                  _c("ts_ns", I64, "its start, ns"),
                  _c("dur_ns", I64, "its duration on the CPU, ns (NULL when it has none)"),
                  _c("depth", I64, "cpu_ops of category cpu_op enclosing it"),
                  _c("parent_event_index", I64, "the innermost cpu_op enclosing it (NULL at "
                     "top level)"),
                  _c("top_event_index", I64, "the outermost cpu_op enclosing it (itself at "
                     "top level)"),
                  _c("partial_overlap", pa.bool_(), "true when it does not nest within its "
                     "parent op"),
                  _c("gpu_kernels", I64, "GPU activities attributed to it"),
                  _c("gpu_self_ns", I64, "sum of their durations, ns"),
                  _c("gpu_self_comm_ns", I64, "the part of gpu_self_ns in communication "
                     "kernels (default rules), ns"),
                  _c("gpu_self_busy_ns", I64, "length of the union of their intervals, ns"),
                  _c("gpu_total_ns", I64, "sum of the durations of its own and its "
                     "descendants' activity, ns"),
                  _c("gpu_total_busy_ns", I64, "length of the union of those intervals, ns"),
                  _c("rules", STR, "fingerprint of the rules that gave the classes"),
              )),
        Table("critical_path_edges", "each trace's critical path of each step (HTA's rules, "
              "see rank_critical_path), measured at ingest: one row per path edge",
              (
                  _c("trace_id", STR, "the trace"),
                  _c("step", STR, "the step (ProfilerStep#N); NULL: the whole capture, the "
                     "trace having no step"),
                  _c("seq", I64, "position of the edge on the step's path, from 0"),
                  _c("bound_by", STR, "cpu_bound, data_loading, gpu_compute_bound, "
                     "gpu_communication_bound, gpu_kernel_launch_overhead or "
                     "gpu_kernel_kernel_overhead"),
                  _c("ns", I64, "the edge's weight: time it adds to the path, ns"),
                  _c("start_ns", I64, "time of its first node, ns"),
                  _c("end_ns", I64, "time of its last node, ns"),
                  _c("name", STR, "name of the event it is attributed to"),
                  _c("event_table", STR, "that event's table: cpu_ops, runtime or kernels; "
                     "NULL for a launch delay, but a graph launch's (runtime: its call)"),
                  _c("event_index", I64, "that event's event_index in its table"),
                  _c("segment_of", I64, "NULL on the step's path; else the event_index "
                     "(kernels) of the communication kernel whose segment the row is on: "
                     "the trace's longest path into its start, back to and with the previous "
                     "communication kernel on it (what the job's path across ranks joins)"),
              )),
        Table("call_tree", "each trace's host call tree in four layers (all, cpu_op, module, "
              "annotation), built at ingest: one row per event and layer (see _host_layers)",
              (
                  _c("trace_id", STR, "the trace"),
                  _c("layer", STR, "all, cpu_op, module or annotation"),
                  _c("event_index", I64, "the event, in cpu_ops, runtime or instants"),
                  _c("source", STR, "cpu_ops, runtime or instants: the table holding it"),
                  _c("cat", STR, "its category"),
                  _c("name", STR, "its name"),
                  _c("pid", STR, "its process"),
                  _c("tid", STR, "its thread"),
                  _c("ts_ns", I64, "its start, ns"),
                  _c("dur_ns", I64, "its duration, ns (NULL when it has none)"),
                  _c("member", pa.bool_(), "true when it belongs to the layer (can enclose)"),
                  _c("pos", I64, "1-based position in its thread's start order in the layer"),
                  _c("depth", I64, "members open at its start (0: top level)"),
                  _c("parent_event_index", I64, "the member one level up (NULL at depth 0)"),
                  _c("parent_end_ns", I64, "that parent's end, ns"),
                  _c("top_event_index", I64, "the outermost enclosing member (itself for a "
                     "member at depth 0; NULL for a non-member at depth 0)"),
                  _c("partial_overlap", pa.bool_(), "true when it ends after its parent or "
                     "starts once its parent ended"),
              )),
        Table("kernel_ops", "each trace's GPU activity (not ranges nor waits) with its launch "
              "and the op, module and annotation it is attributed to, built at ingest (see "
              "op_kernels)",
              (
                  _c("trace_id", STR, "the trace"),
                  _c("event_index", I64, "the GPU activity's event in kernels"),
                  _c("launch_event_index", I64, "the launch's event in runtime (NULL: none)"),
                  _c("op_event_index", I64, "the cpu_op it is attributed to (NULL: none)"),
                  _c("module_event_index", I64, "the innermost nn.Module frame around the "
                     "launch"),
                  _c("annotation_event_index", I64, "the innermost user_annotation around "
                     "the launch"),
                  _c("link", STR, "containment, external_id, runtime_only or unlaunched"),
              )),
        Table("kernel_attribution", "each trace's GPU activity (not ranges nor waits) with "
              "its own columns, its launch and the op, module and annotation it is attributed "
              "to, names included: op_kernels' rows as the trace gives them, built at ingest "
              "(see op_kernels)",
              (
                  _c("trace_id", STR, "the trace"),
                  _c("event_index", I64, "the GPU activity's event in kernels"),
                  _c("category", STR, "as in kernels"),
                  _c("name", STR, "as in kernels"),
                  _c("name_id", I64, "as in kernels"),
                  _c("ts_ns", I64, "as in kernels"),
                  _c("dur_ns", I64, "as in kernels"),
                  _c("device", I32, "as in kernels"),
                  _c("stream", I64, "as in kernels"),
                  _c("correlation", I64, "as in kernels"),
                  _c("launch_event_index", I64, "the launch's event in runtime (NULL: none)"),
                  _c("launch", STR, "the launch's name"),
                  _c("launch_tid", STR, "the thread that launched it"),
                  _c("op_event_index", I64, "the cpu_op it is attributed to (NULL: none)"),
                  _c("op_name", STR, "that op's name"),
                  _c("top_op_event_index", I64, "the outermost cpu_op enclosing that op (the "
                     "op itself at top level)"),
                  _c("top_op_name", STR, "its name"),
                  _c("module_event_index", I64, "the innermost nn.Module frame around the "
                     "launch"),
                  _c("module", STR, "that frame's name without `nn.Module: `"),
                  _c("annotation_event_index", I64, "the innermost user_annotation around "
                     "the launch"),
                  _c("annotation", STR, "its name"),
                  _c("link", STR, "containment, external_id, runtime_only or unlaunched"),
              )),
        Table("call_ancestors", "the ancestors of each trace's nn.Module frames and of its "
              "cpu_ops that launched GPU activity, built at ingest: one row per event and "
              "enclosing member (see _host_ancestors)",
              (
                  _c("trace_id", STR, "the trace"),
                  _c("layer", STR, "cpu_op or module"),
                  _c("event_index", I64, "the event (a cpu_op or an nn.Module frame)"),
                  _c("level", I64, "the ancestor's depth (0: outermost)"),
                  _c("ancestor_event_index", I64, "the ancestor member"),
              )),
        Table("backward_links", "each trace's backward calls linked to the forward op that "
              "made their autograd node, built at ingest (see op_backward)",
              (
                  _c("trace_id", STR, "the trace"),
                  _c("event_index", I64, "the backward call's event in cpu_ops"),
                  _c("forward_event_index", I64, "the forward op's event in cpu_ops"),
                  _c("link", STR, "fwdbwd or sequence_number"),
              )),
        Table("devices", "deviceProperties: one row per GPU described in a trace",
              (
                  _c("trace_id", STR, "the trace that described it"),
                  _c("device", I32, "device id"),
                  _c("name", STR, "device name"),
                  _c("total_global_mem", I64, "bytes of global memory"),
                  _c("compute_major", I32, "compute capability, major"),
                  _c("compute_minor", I32, "compute capability, minor"),
                  _c("num_sms", I32, "number of SMs / CUs"),
                  _c("properties", STR, "all properties as JSON"),
              )),
    )
}
