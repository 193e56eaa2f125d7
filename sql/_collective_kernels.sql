-- Every communication kernel of every rank as a collective call, without its annotation:
-- what `collective_calls` shows and `collective_instances` matches (the annotation needs the
-- whole host call tree, which the matching does not).
-- A call is a `kernel` event of class communication under the kernel rules (NCCL, RCCL,
-- HCCL, NVSHMEM, DeepEP...). Its metadata comes from the kernel's args, else from the
-- enclosing `record_param_comms` op's args, else from the enclosing `nccl:*` range
-- (`_collective_ops`; older traces keep it there only). Its collective is the `Collective
-- name` of those args, else the nccl:* range's name (nccl:all_to_all), else the NCCL kernel
-- name's (`ncclKernel_AllReduce_...`), else DeepEP's op name (`dpsk::ep::internode::
-- dispatch<...>` -> dispatch), else the rules' collective; names are normalised
-- (`allreduce`, `_allgather_base`, `all_gather_into_tensor` -> all_reduce, all_gather; send
-- and recv -> send_recv). Sizes (`size_source`): the kernel's `In msg nelems`, `Out msg
-- nelems` and `dtype`; else the record_param_comms op's, or its first `Input Dims` tensor
-- and `Input type`; else the nccl:* range's first `Input Dims` tensor (up to 4 dimensions)
-- and `Input type`; else none (DeepEP today: bytes NULL). `msg_bytes` is the collective's
-- size as nccl-tests counts it: the larger of its input and output buffers (all_gather: the
-- gathered output; reduce_scatter: the input); from Input Dims, the first tensor's. A
-- process group without a name or id is `unknown`, of the trace's world size. `seq` numbers
-- a rank's calls within its capture group (`_collective_captures`) and process group by
-- start time (ties by event order): `collective_instances` matches calls of equal seq
-- across ranks.
--
-- Reads: kernels, kernel_name_classes, traces, _collective_captures, _collective_ops
--
-- Columns:
--   run, phase, rank    partition
--   trace_id            the capture
--   event_index         the kernel event in its trace
--   capture_group       the capture group of the run and phase (see _collective_captures)
--   stream              GPU stream of the kernel
--   name                the kernel name
--   collective          all_reduce, all_gather, reduce_scatter, all_to_all, broadcast,
--                       reduce, send_recv, gather, scatter, barrier, DeepEP's op (dispatch,
--                       combine, notify_dispatch, cached_notify, get_dispatch_layout...),
--                       else the rules' collective or other
--   algorithm           NCCL algorithm from the kernel name (RING, TREE, NVLS, NVLS_TREE,
--                       COLLNET_DIRECT, COLLNET_CHAIN, PAT), else NULL
--   protocol            NCCL protocol from the kernel name (LL, LL128, SIMPLE), else NULL
--   process_group       `Process Group Name` arg, else `Process Group ID`, else 'unknown'
--   process_group_desc  `Process Group Description` arg (default_pg...), else NULL
--   group_size          `Group size` arg, else the trace's world size, else NULL
--   dtype               the element type as written (Float, BFloat16, float...), else NULL
--   elem_bytes          bytes per element of dtype, else NULL
--   in_elems            input elements, else NULL
--   out_elems           output elements (NULL from Input Dims)
--   in_splits           `In split size` as written (a text list, '[1, 2]'), NULL when empty
--   out_splits          `Out split size` as written, NULL when empty
--   split_max           the largest of in_splits (else out_splits), NULL without splits
--   split_mean          their mean (DOUBLE), NULL without splits
--   msg_bytes           greatest(in_elems, out_elems) * elem_bytes, bytes; NULL when unknown
--   size_source         kernel_args, record_param_comms, nccl_range or none
--   seq                 1, 2, ... within run, phase, rank, capture_group, process_group
--   start_ns            kernel start, ns
--   dur_ns              kernel duration, ns
--   end_ns              start_ns + dur_ns, ns
CREATE OR REPLACE VIEW _collective_kernels AS
WITH comm_names AS NOT MATERIALIZED (
  SELECT run, category, name_key, name, collective
  FROM kernel_name_classes
  WHERE class = 'communication' AND category = 'kernel'
),
joined AS NOT MATERIALIZED (
  SELECT k.run, k.phase, k.rank, k.trace_id, k.event_index, k.stream, n.name, k.ts_ns,
         k.dur_ns, n.collective AS rule_collective, k.args, o.comms_args, o.range_name,
         o.range_args
  FROM kernels AS k
  JOIN comm_names AS n
    ON n.run = k.run AND n.category = k.category AND n.name_key = k.name_id
  LEFT JOIN _collective_ops AS o
    ON o.run = k.run AND o.phase = k.phase AND o.rank = k.rank AND o.trace_id = k.trace_id
   AND o.event_index = k.event_index
),
fields AS NOT MATERIALIZED (
  SELECT run, phase, rank, trace_id, event_index, stream, name, ts_ns, dur_ns,
         rule_collective, range_name, range_args, comms_args,
         coalesce(json_extract_string(args, '$."Collective name"'),
                  json_extract_string(comms_args, '$."Collective name"'),
                  nullif(regexp_extract(range_name, '^nccl:(.+)$', 1), '')) AS args_collective,
         coalesce(json_extract_string(args, '$."Process Group Name"'),
                  json_extract_string(comms_args, '$."Process Group Name"')) AS pg_name,
         coalesce(json_extract_string(args, '$."Process Group ID"'),
                  json_extract_string(comms_args, '$."Process Group ID"')) AS pg_id,
         coalesce(json_extract_string(args, '$."Process Group Description"'),
                  json_extract_string(comms_args, '$."Process Group Description"'))
           AS process_group_desc,
         TRY_CAST(coalesce(json_extract_string(args, '$."Group size"'),
                           json_extract_string(comms_args, '$."Group size"')) AS BIGINT)
           AS args_group_size,
         nullif(trim(coalesce(json_extract_string(args, '$."In split size"'),
                              json_extract_string(comms_args, '$."In split size"'))), '[]')
           AS in_splits,
         nullif(trim(coalesce(json_extract_string(args, '$."Out split size"'),
                              json_extract_string(comms_args, '$."Out split size"'))), '[]')
           AS out_splits,
         json_extract_string(args, '$.dtype') AS kernel_dtype,
         TRY_CAST(json_extract_string(args, '$."In msg nelems"') AS BIGINT) AS kernel_in,
         TRY_CAST(json_extract_string(args, '$."Out msg nelems"') AS BIGINT) AS kernel_out,
         json_extract_string(comms_args, '$.dtype') AS comms_dtype,
         TRY_CAST(json_extract_string(comms_args, '$."In msg nelems"') AS BIGINT) AS comms_in,
         TRY_CAST(json_extract_string(comms_args, '$."Out msg nelems"') AS BIGINT) AS comms_out,
         json_extract_string(comms_args, '$."Input type"[0]') AS comms_type,
         json_extract_string(comms_args, '$."Input Dims"[0][0]') AS comms_dim,
         json_extract_string(range_args, '$."Input type"[0]') AS range_type,
         json_extract_string(range_args, '$."Input Dims"[0][0]') AS range_dim
  FROM joined
),
sourced AS NOT MATERIALIZED (
  SELECT *,
         CASE
           WHEN kernel_dtype IS NOT NULL AND coalesce(kernel_in, kernel_out) IS NOT NULL
             THEN 'kernel_args'
           WHEN comms_dtype IS NOT NULL AND coalesce(comms_in, comms_out) IS NOT NULL
             THEN 'record_param_comms'
           WHEN comms_dim IS NOT NULL AND comms_type NOT IN ('TensorList', 'Scalar', '')
             THEN 'record_param_comms_dims'
           WHEN range_dim IS NOT NULL AND range_type NOT IN ('TensorList', 'Scalar', '')
             THEN 'nccl_range'
           ELSE 'none'
         END AS source
  FROM fields
),
dims AS NOT MATERIALIZED (
  -- the first Input Dims tensor of the op that gives the size: its elements, up to 4
  -- dimensions (a 5-dimensional one has none)
  SELECT *,
         CASE WHEN json_extract_string(dims_args, '$."Input Dims"[0][4]') IS NULL THEN
           TRY_CAST(json_extract_string(dims_args, '$."Input Dims"[0][0]') AS BIGINT)
           * coalesce(TRY_CAST(json_extract_string(dims_args, '$."Input Dims"[0][1]') AS BIGINT), 1)
           * coalesce(TRY_CAST(json_extract_string(dims_args, '$."Input Dims"[0][2]') AS BIGINT), 1)
           * coalesce(TRY_CAST(json_extract_string(dims_args, '$."Input Dims"[0][3]') AS BIGINT), 1)
         END AS dims_elems
  FROM (SELECT *,
               CASE source WHEN 'record_param_comms_dims' THEN comms_args
                           WHEN 'nccl_range' THEN range_args END AS dims_args
        FROM sourced) AS s
),
raw AS NOT MATERIALIZED (
  SELECT run, phase, rank, trace_id, event_index, stream, name, ts_ns, dur_ns,
         rule_collective, args_collective, pg_name, pg_id, process_group_desc,
         args_group_size, in_splits, out_splits,
         CASE source WHEN 'record_param_comms_dims' THEN 'record_param_comms'
                     ELSE source END AS size_source,
         CASE source WHEN 'kernel_args' THEN kernel_dtype
                     WHEN 'record_param_comms' THEN comms_dtype
                     WHEN 'record_param_comms_dims' THEN comms_type
                     WHEN 'nccl_range' THEN range_type
                     ELSE coalesce(kernel_dtype, comms_dtype) END AS dtype,
         CASE source WHEN 'kernel_args' THEN kernel_in
                     WHEN 'record_param_comms' THEN comms_in
                     WHEN 'none' THEN NULL
                     ELSE dims_elems END AS in_elems,
         CASE source WHEN 'kernel_args' THEN kernel_out
                     WHEN 'record_param_comms' THEN comms_out END AS out_elems
  FROM dims
),
named AS NOT MATERIALIZED (
  SELECT *,
         coalesce(
           args_collective,
           nullif(nullif(regexp_extract(lower(name), '^nccl(?:dev)?kernel_([a-z]+)_', 1), ''),
                  'generic'),
           nullif(regexp_extract(lower(name),
                                 '(?:deep_ep|dpsk::ep)::(?:[a-z0-9_]+::)*([a-z0-9_]+)', 1), ''),
           rule_collective) AS raw_collective,
         nullif(regexp_extract(name, 'Kernel_[A-Za-z]+_(RING|TREE|NVLS_TREE|NVLS|COLLNET_DIRECT'
                                     || '|COLLNET_CHAIN|PAT)_(LL128|LL|SIMPLE)', 1), '')
           AS algorithm,
         nullif(regexp_extract(name, 'Kernel_[A-Za-z]+_(RING|TREE|NVLS_TREE|NVLS|COLLNET_DIRECT'
                                     || '|COLLNET_CHAIN|PAT)_(LL128|LL|SIMPLE)', 2), '')
           AS protocol,
         CASE
           WHEN lower(replace(dtype, 'c10::', '')) IN ('double', 'long', 'long int', 'int64',
                                                      'complexfloat', 'uint64') THEN 8
           WHEN lower(replace(dtype, 'c10::', '')) IN ('float', 'int', 'int32', 'uint32') THEN 4
           WHEN lower(replace(dtype, 'c10::', '')) IN ('half', 'bfloat16', 'float16', 'short',
                                                      'short int', 'int16', 'uint16') THEN 2
           WHEN lower(replace(dtype, 'c10::', '')) IN ('byte', 'char', 'bool', 'int8', 'uint8',
                                                      'unsigned char', 'signed char')
             OR lower(dtype) LIKE 'float8%' THEN 1
           WHEN lower(replace(dtype, 'c10::', '')) = 'complexdouble' THEN 16
         END AS elem_bytes
  FROM raw
),
normalised AS NOT MATERIALIZED (
  SELECT *,
         regexp_replace(regexp_replace(lower(raw_collective),
                                       '(_base|_coalesced|_into_tensor|_tensor|_single)+$', ''),
                        '_', '', 'g') AS collective_key
  FROM named
),
split_lists AS NOT MATERIALIZED (
  SELECT *,
         TRY_CAST(string_split(replace(replace(replace(coalesce(in_splits, out_splits),
                                                       '[', ''), ']', ''), ' ', ''),
                               ',') AS BIGINT[]) AS split_list
  FROM normalised
),
calls AS NOT MATERIALIZED (
  SELECT *, list_max(split_list) AS split_max,
         CAST(list_sum(split_list) AS DOUBLE) / array_length(split_list) AS split_mean
  FROM split_lists
)
SELECT c.run, c.phase, c.rank, c.trace_id, c.event_index, g.capture_group, c.stream, c.name,
       CASE
         WHEN c.collective_key = 'allreduce' THEN 'all_reduce'
         WHEN c.collective_key = 'allgather' THEN 'all_gather'
         WHEN c.collective_key = 'reducescatter' THEN 'reduce_scatter'
         WHEN c.collective_key IN ('alltoall', 'alltoallv') THEN 'all_to_all'
         WHEN c.collective_key IN ('broadcast', 'bcast') THEN 'broadcast'
         WHEN c.collective_key IN ('send', 'recv', 'sendrecv', 'p2p') THEN 'send_recv'
         WHEN c.collective_key IN ('reduce', 'gather', 'scatter', 'barrier')
           THEN c.collective_key
         ELSE lower(c.raw_collective)
       END AS collective,
       c.algorithm, c.protocol,
       coalesce(c.pg_name, c.pg_id, 'unknown') AS process_group, c.process_group_desc,
       coalesce(c.args_group_size, t.world_size) AS group_size,
       c.dtype, c.elem_bytes, c.in_elems, c.out_elems, c.in_splits, c.out_splits,
       c.split_max, c.split_mean,
       greatest(coalesce(c.in_elems, c.out_elems), coalesce(c.out_elems, c.in_elems))
         * c.elem_bytes AS msg_bytes,
       CASE WHEN c.elem_bytes IS NOT NULL AND coalesce(c.in_elems, c.out_elems) IS NOT NULL
            THEN c.size_source ELSE 'none' END AS size_source,
       row_number() OVER (
         PARTITION BY c.run, c.phase, c.rank, g.capture_group,
                      coalesce(c.pg_name, c.pg_id, 'unknown')
         ORDER BY c.ts_ns, c.trace_id, c.event_index) AS seq,
       c.ts_ns AS start_ns, c.dur_ns, c.ts_ns + c.dur_ns AS end_ns
FROM calls AS c
JOIN _collective_captures AS g
  ON g.run = c.run AND g.phase = c.phase AND g.rank = c.rank AND g.trace_id = c.trace_id
JOIN traces AS t
  ON t.run = c.run AND t.phase = c.phase AND t.rank = c.rank AND t.trace_id = c.trace_id;
