-- FLOPs and bytes moved of each call of a memory-bound operator (elementwise, gated
-- activation, normalisation, RMSNorm, rotary embedding, reduction, softmax, KV-cache write),
-- from its recorded shapes: the vector-unit models op_perf measures calls against, beside
-- _op_models's GEMM, attention and convolution. The op-name matchers and the operand positions each model reads
-- are the `specs` rows below (the data); the formulas are the model columns of `modeled`.
-- As in _op_models: a call needs `Input Dims`, shapes that are not integers (or a rank past
-- 6) make it absent, the arithmetic is DOUBLE. One op per computation is matched, the one
-- that launches the kernel (aten::native_layer_norm, not the aten::layer_norm around it).
-- An operand moves its elements x its type's size (_dtypes); a `Scalar` or None operand
-- moves nothing. N is the elements of x (the model's main input).
-- Formulas (agreeing with TraceLens's where its formula is right; docs/perf-models.md):
--   unary          flops N; bytes N (x + out), out = x's type unless out_at names a tensor
--   binary         out = x and y broadcast; flops out; bytes x + y + out, out's type: the
--                  out= tensor's, else the larger of x's and y's (y's only when it has a
--                  dimension: a 0-dim tensor does not promote)
--   gated          silu/gelu-and-mul (out = act(x[..., :d]) * x[..., d:]): flops 5 out;
--                  bytes x + out
--   norm           batch, layer and group norm over C channels (training computes the
--                  statistics): flops 6 C + 2 N (+ 3 N training); bytes 2 N + (2 + weight
--                  + bias + 2 if training) C, in x's type
--   rms_norm       rows = N / C (C the weight's elements): flops rows (2 C + 2) + 2 N
--                  (N without a weight); bytes x + out + weight
--   add_rms_norm   the residual add first: flops N + rms_norm's; bytes 4 N (x, residual in,
--                  out, residual out) + weight
--   rope           rotated n = (query + key elements) / head_size x rot_dim: flops 3 n;
--                  bytes 2 n (read and write q, k) + the cos/sin rows of the tokens
--                  (tokens x rot_dim) + the positions
--   reduce         flops N; bytes x + out, out = N over the reduced dimensions' sizes (1
--                  when no dimension is given; a dimension past the rank: bytes NULL);
--                  max/min over a dimension also write int64 indices; sums of integers
--                  write int64
--   scan           cumsum/cumprod: out = N; flops N; bytes x + out (int64 for integers)
--   softmax        flops 3 N (exp, sum, divide); bytes x + out (fp32 out with half_to_float)
--   cache_write    the new tokens' K (x) and V (y) copied into the KV cache: flops 0; bytes
--                  2 (K + V), read and written
--
-- Reads: cpu_ops, _dtypes
--
-- Columns:
--   run, phase, rank   partition
--   trace_id           the trace of the call
--   event_index        the call's cpu_op event
--   name               the op (aten::add, aiter::rmsnorm, ...)
--   family             elementwise, norm, rmsnorm, rope, reduce or kv_cache
--   pass               forward
--   shapes             the call's Input Dims, JSON text
--   a_type             the profiler's type of x (c10::BFloat16, ...)
--   dtype              its peak class (see _dtypes), NULL when unknown
--   flops              floating-point operations of the call (DOUBLE)
--   bytes              bytes read and written (DOUBLE), NULL when a type is unknown
CREATE OR REPLACE VIEW _op_vector_models AS
WITH specs AS (
  -- x_at: the main input; y_at: the second input (binary; rope: key); w_at: the weight (norm:
  -- weight, then bias at w_at + 1; rope: the cos/sin cache); out_at: an output or extra
  -- tensor (unary, binary: the output's type; gated: the output; rope: the positions).
  -- train_at: the training flag of batch norm (NULL: statistics computed).
  SELECT *
  FROM (VALUES
    ('aten::copy_', 'elementwise', 'unary', 0, NULL, NULL, 1, NULL),
    ('aten::neg', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::abs', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::exp', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::log', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::sqrt', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::rsqrt', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::reciprocal', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::sin', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::cos', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::tanh', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::sigmoid', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::relu', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::relu_', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::gelu', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::silu', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::silu_', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::pow', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::clamp', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::clamp_min', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::clamp_min_', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::clamp_max', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::clamp_max_', 'elementwise', 'unary', 0, NULL, NULL, NULL, NULL),
    ('aten::add', 'elementwise', 'binary', 0, 1, NULL, 2, NULL),
    ('aten::add_', 'elementwise', 'binary', 0, 1, NULL, 2, NULL),
    ('aten::sub', 'elementwise', 'binary', 0, 1, NULL, 2, NULL),
    ('aten::sub_', 'elementwise', 'binary', 0, 1, NULL, 2, NULL),
    ('aten::mul', 'elementwise', 'binary', 0, 1, NULL, 2, NULL),
    ('aten::mul_', 'elementwise', 'binary', 0, 1, NULL, 2, NULL),
    ('aten::div', 'elementwise', 'binary', 0, 1, NULL, 2, NULL),
    ('aten::div_', 'elementwise', 'binary', 0, 1, NULL, 2, NULL),
    ('aten::maximum', 'elementwise', 'binary', 0, 1, NULL, 2, NULL),
    ('aten::minimum', 'elementwise', 'binary', 0, 1, NULL, 2, NULL),
    ('aten::sigmoid_backward', 'elementwise', 'binary', 0, 1, NULL, 2, NULL),
    ('aten::threshold_backward', 'elementwise', 'binary', 0, 1, NULL, 2, NULL),
    ('aten::gelu_backward', 'elementwise', 'binary', 0, 1, NULL, 2, NULL),
    ('aten::silu_backward', 'elementwise', 'binary', 0, 1, NULL, 2, NULL),
    ('sgl_kernel::silu_and_mul', 'elementwise', 'gated', 1, NULL, NULL, 0, NULL),
    ('sgl_kernel::gelu_and_mul', 'elementwise', 'gated', 1, NULL, NULL, 0, NULL),
    ('sgl_kernel::gelu_tanh_and_mul', 'elementwise', 'gated', 1, NULL, NULL, 0, NULL),
    ('aiter::silu_and_mul', 'elementwise', 'gated', 1, NULL, NULL, 0, NULL),
    ('aiter::gelu_and_mul', 'elementwise', 'gated', 1, NULL, NULL, 0, NULL),
    ('aiter::gelu_tanh_and_mul', 'elementwise', 'gated', 1, NULL, NULL, 0, NULL),
    ('_C::silu_and_mul', 'elementwise', 'gated', 1, NULL, NULL, 0, NULL),
    ('_C::gelu_and_mul', 'elementwise', 'gated', 1, NULL, NULL, 0, NULL),
    ('_C::gelu_tanh_and_mul', 'elementwise', 'gated', 1, NULL, NULL, 0, NULL),
    ('aten::native_layer_norm', 'norm', 'norm', 0, NULL, 2, NULL, NULL),
    ('aten::native_group_norm', 'norm', 'norm', 0, NULL, 1, NULL, NULL),
    ('aten::native_batch_norm', 'norm', 'norm', 0, NULL, 1, NULL, 5),
    ('aten::cudnn_batch_norm', 'norm', 'norm', 0, NULL, 1, NULL, 5),
    ('aten::miopen_batch_norm', 'norm', 'norm', 0, NULL, 1, NULL, 5),
    ('aten::_native_batch_norm_legit', 'norm', 'norm', 0, NULL, 1, NULL, 5),
    ('aten::_native_batch_norm_legit_no_training', 'norm', 'norm', 0, NULL, 1, NULL, -1),
    ('aten::_fused_rms_norm', 'rmsnorm', 'rms_norm', 0, NULL, 2, NULL, NULL),
    ('aiter::rms_norm', 'rmsnorm', 'rms_norm', 0, NULL, 1, NULL, NULL),
    ('aiter::rmsnorm2d_fwd', 'rmsnorm', 'rms_norm', 0, NULL, 1, NULL, NULL),
    ('aiter::rmsnorm', 'rmsnorm', 'rms_norm', 1, NULL, 2, NULL, NULL),
    ('_C::rms_norm', 'rmsnorm', 'rms_norm', 1, NULL, 2, NULL, NULL),
    ('sgl_kernel::rmsnorm', 'rmsnorm', 'rms_norm', 1, NULL, 2, NULL, NULL),
    ('aiter::add_rmsnorm', 'rmsnorm', 'add_rms_norm', 1, NULL, 4, NULL, NULL),
    ('aiter::rmsnorm2d_fwd_with_add', 'rmsnorm', 'add_rms_norm', 1, NULL, 4, NULL, NULL),
    ('aiter::rmsnorm2d_fwd_with_add_ck', 'rmsnorm', 'add_rms_norm', 1, NULL, 4, NULL, NULL),
    ('_C::fused_add_rms_norm', 'rmsnorm', 'add_rms_norm', 0, NULL, 2, NULL, NULL),
    ('sgl_kernel::fused_add_rmsnorm', 'rmsnorm', 'add_rms_norm', 0, NULL, 2, NULL, NULL),
    ('sgl_kernel::rotary_embedding', 'rope', 'rope', 1, 2, 4, 0, NULL),
    ('_C::rotary_embedding', 'rope', 'rope', 1, 2, 4, 0, NULL),
    ('sglang::store_cache', 'kv_cache', 'cache_write', 0, 1, NULL, NULL, NULL),
    ('_C_cache_ops::reshape_and_cache', 'kv_cache', 'cache_write', 0, 1, NULL, NULL, NULL),
    ('_C_cache_ops::reshape_and_cache_flash', 'kv_cache', 'cache_write', 0, 1, NULL, NULL,
     NULL),
    ('aten::sum', 'reduce', 'reduce', 0, NULL, NULL, NULL, NULL),
    ('aten::mean', 'reduce', 'reduce', 0, NULL, NULL, NULL, NULL),
    ('aten::amax', 'reduce', 'reduce', 0, NULL, NULL, NULL, NULL),
    ('aten::amin', 'reduce', 'reduce', 0, NULL, NULL, NULL, NULL),
    ('aten::max', 'reduce', 'indexed', 0, NULL, NULL, NULL, NULL),
    ('aten::min', 'reduce', 'indexed', 0, NULL, NULL, NULL, NULL),
    ('aten::cumsum', 'reduce', 'scan', 0, NULL, NULL, NULL, NULL),
    ('aten::cumprod', 'reduce', 'scan', 0, NULL, NULL, NULL, NULL),
    ('aten::_softmax', 'reduce', 'softmax', 0, NULL, NULL, NULL, NULL),
    ('aten::_log_softmax', 'reduce', 'softmax', 0, NULL, NULL, NULL, NULL)
  ) AS s (name, family, model, x_at, y_at, w_at, out_at, train_at)
),
calls AS (
  SELECT o.run, o.phase, o.rank, o.trace_id, o.event_index, o.name, s.family, s.model,
         s.x_at, s.y_at, s.w_at, s.out_at, s.train_at,
         CAST(json_extract(o.args, '$."Input Dims"') AS VARCHAR) AS dims,
         CAST(json_extract(o.args, '$."Input type"') AS VARCHAR) AS types,
         CAST(json_extract(o.args, '$."Concrete Inputs"') AS VARCHAR) AS concrete
  FROM cpu_ops AS o
  JOIN specs AS s ON s.name = o.name
  WHERE o.args LIKE '%"Input Dims"%'
),
roles AS (
  SELECT * FROM (VALUES ('x'), ('y'), ('w'), ('bias'), ('out')) AS r (role)
),
operand_at AS (
  SELECT c.*, r.role,
         CASE r.role WHEN 'x' THEN c.x_at WHEN 'y' THEN c.y_at WHEN 'w' THEN c.w_at
                     WHEN 'bias' THEN CASE WHEN c.model = 'norm' THEN c.w_at + 1 END
                     ELSE c.out_at END AS pos
  FROM calls AS c
  CROSS JOIN roles AS r
),
operand_dims AS (
  SELECT *, '$[' || CAST(pos AS VARCHAR) || ']' AS path,
         CAST(json_array_length(json_extract_string(dims, '$[' || CAST(pos AS VARCHAR) || ']'))
              AS BIGINT) AS operand_rank,
         json_extract_string(types, '$[' || CAST(pos AS VARCHAR) || ']') AS operand_type
  FROM operand_at
  WHERE pos IS NOT NULL
),
dimension_rows AS (
  -- each dimension of each operand, k counting from the last (k = 0: the last dimension)
  SELECT o.run, o.phase, o.rank, o.trace_id, o.event_index, o.role, p.k,
         CAST(TRY_CAST(json_extract_string(o.dims, o.path || '['
                                           || CAST(o.operand_rank - 1 - p.k AS VARCHAR) || ']')
                       AS BIGINT) AS DOUBLE) AS size
  FROM operand_dims AS o
  JOIN (VALUES (0), (1), (2), (3), (4), (5)) AS p (k) ON p.k < o.operand_rank
),
dimensions AS (
  SELECT run, phase, rank, trace_id, event_index, role,
         count(*) - count(size) AS unreadable,
         max(CASE WHEN k = 0 THEN size END) AS d0, max(CASE WHEN k = 1 THEN size END) AS d1,
         max(CASE WHEN k = 2 THEN size END) AS d2, max(CASE WHEN k = 3 THEN size END) AS d3,
         max(CASE WHEN k = 4 THEN size END) AS d4, max(CASE WHEN k = 5 THEN size END) AS d5
  FROM dimension_rows
  GROUP BY run, phase, rank, trace_id, event_index, role
),
operand_sizes AS (
  -- d0 .. d5: the dimensions from the last (NULL past the rank); second: the second
  -- dimension (channels)
  SELECT o.*, d.unreadable, d.d0, d.d1, d.d2, d.d3, d.d4, d.d5,
         CAST(TRY_CAST(json_extract_string(o.dims, o.path || '[1]') AS BIGINT) AS DOUBLE)
           AS second
  FROM operand_dims AS o
  LEFT JOIN dimensions AS d
    ON d.run = o.run AND d.phase = o.phase AND d.rank = o.rank AND d.trace_id = o.trace_id
   AND d.event_index = o.event_index AND d.role = o.role
),
operands AS (
  -- a tensor (a type with a size) of known shape: its elements, else NULL; not a tensor:
  -- no elements at all (0), moving nothing
  SELECT s.*, t.element_bytes, t.dtype,
         CASE WHEN t.element_bytes IS NULL THEN 0
              WHEN s.operand_rank IS NULL OR s.operand_rank > 6 OR s.unreadable > 0 THEN NULL
              ELSE coalesce(s.d0, 1) * coalesce(s.d1, 1) * coalesce(s.d2, 1)
                   * coalesce(s.d3, 1) * coalesce(s.d4, 1) * coalesce(s.d5, 1) END AS elements,
         s.operand_type IN ('bool', 'signed char', 'unsigned char', 'short int', 'int',
                            'long int') AS integral
  FROM operand_sizes AS s
  LEFT JOIN _dtypes AS t ON t.input_type = s.operand_type
),
pivoted AS (
  SELECT run, phase, rank, trace_id, event_index, name, family, model, dims, concrete,
         train_at,
         max(CASE WHEN role = 'x' THEN operand_type END) AS a_type,
         max(CASE WHEN role = 'x' THEN dtype END) AS dtype,
         max(CASE WHEN role = 'x' THEN operand_rank END) AS x_rank,
         max(CASE WHEN role = 'x' THEN elements END) AS x_elements,
         max(CASE WHEN role = 'x' THEN element_bytes END) AS x_bytes,
         max(CASE WHEN role = 'x' THEN CASE WHEN integral THEN 1 ELSE 0 END END) AS x_integral,
         max(CASE WHEN role = 'x' THEN d0 END) AS x0,
         max(CASE WHEN role = 'x' THEN d1 END) AS x1,
         max(CASE WHEN role = 'x' THEN d2 END) AS x2,
         max(CASE WHEN role = 'x' THEN d3 END) AS x3,
         max(CASE WHEN role = 'x' THEN d4 END) AS x4,
         max(CASE WHEN role = 'x' THEN d5 END) AS x5,
         max(CASE WHEN role = 'x' THEN second END) AS x_channels,
         max(CASE WHEN role = 'y' THEN elements END) AS y_elements,
         max(CASE WHEN role = 'y' THEN operand_rank END) AS y_rank,
         max(CASE WHEN role = 'y' THEN element_bytes END) AS y_bytes,
         max(CASE WHEN role = 'y' THEN d0 END) AS y0,
         max(CASE WHEN role = 'y' THEN d1 END) AS y1,
         max(CASE WHEN role = 'y' THEN d2 END) AS y2,
         max(CASE WHEN role = 'y' THEN d3 END) AS y3,
         max(CASE WHEN role = 'y' THEN d4 END) AS y4,
         max(CASE WHEN role = 'y' THEN d5 END) AS y5,
         max(CASE WHEN role = 'w' THEN elements END) AS w_elements,
         max(CASE WHEN role = 'w' THEN element_bytes END) AS w_bytes,
         max(CASE WHEN role = 'w' THEN d0 END) AS w_last,
         max(CASE WHEN role = 'bias' THEN elements END) AS bias_elements,
         max(CASE WHEN role = 'out' THEN elements END) AS out_elements,
         max(CASE WHEN role = 'out' THEN element_bytes END) AS out_bytes
  FROM operands
  GROUP BY run, phase, rank, trace_id, event_index, name, family, model, dims, concrete,
           train_at
),
parsed AS (
  -- reduce: the reduced dimensions (a list '[-1]', or one integer for max/min's dim
  -- overloads; none: all of them); norm: training; rope: the head size
  SELECT *,
         json_extract_string(concrete, '$[1]') AS dim_text,
         CASE WHEN train_at IS NULL THEN true
              WHEN train_at < 0 THEN false
              ELSE lower(json_extract_string(concrete, '$[' || CAST(train_at AS VARCHAR) || ']'))
                   = 'true' END AS training,
         TRY_CAST(json_extract_string(concrete, '$[3]') AS DOUBLE) AS head_size,
         lower(json_extract_string(concrete, '$[2]')) = 'true' AS half_to_float
  FROM pivoted
),
reduced AS (
  SELECT *,
         CASE WHEN regexp_matches(dim_text, '^\[ *-?[0-9]{1,2} *(, *-?[0-9]{1,2} *){0,5}\]$')
              THEN dim_text
              WHEN model = 'indexed' AND regexp_matches(dim_text, '^-?[0-9]{1,2}$')
              THEN '[' || dim_text || ']' END AS dim_list
  FROM parsed
),
reduce_dims AS (
  -- each reduced dimension's size; a dimension past the rank makes the call absent
  SELECT r.run, r.phase, r.rank, r.trace_id, r.event_index,
         count(*) AS dims_reduced,
         max(CASE WHEN p.dim >= r.x_rank OR p.dim < -r.x_rank THEN 1 ELSE 0 END) AS outside,
         -- the product of the sizes, as exp(sum(ln)) is not exact: one factor per position
         max(CASE WHEN p.from_last = 0 THEN r.x0 ELSE 1 END)
         * max(CASE WHEN p.from_last = 1 THEN r.x1 ELSE 1 END)
         * max(CASE WHEN p.from_last = 2 THEN r.x2 ELSE 1 END)
         * max(CASE WHEN p.from_last = 3 THEN r.x3 ELSE 1 END)
         * max(CASE WHEN p.from_last = 4 THEN r.x4 ELSE 1 END)
         * max(CASE WHEN p.from_last = 5 THEN r.x5 ELSE 1 END) AS reduced_elements
  FROM reduced AS r
  JOIN (
    SELECT q.run, q.phase, q.rank, q.trace_id, q.event_index, q.dim,
           CASE WHEN q.dim < 0 THEN -q.dim - 1 ELSE q.x_rank - 1 - q.dim END AS from_last
    FROM (
      SELECT run, phase, rank, trace_id, event_index, x_rank,
             TRY_CAST(json_extract_string(dim_list, '$[' || CAST(i AS VARCHAR) || ']') AS BIGINT)
               AS dim
      FROM reduced
      CROSS JOIN (VALUES (0), (1), (2), (3), (4), (5)) AS positions (i)
      WHERE dim_list IS NOT NULL AND i < json_array_length(dim_list)
    ) AS q
  ) AS p
    ON p.run = r.run AND p.phase = r.phase AND p.rank = r.rank AND p.trace_id = r.trace_id
   AND p.event_index = r.event_index
  GROUP BY r.run, r.phase, r.rank, r.trace_id, r.event_index
),
shaped AS (
  SELECT r.*,
         -- binary: the broadcast output, dimension by dimension from the last
         CASE WHEN model = 'binary' THEN
           (CASE WHEN coalesce(x0, 1) >= coalesce(y0, 1) THEN coalesce(x0, 1) ELSE y0 END)
           * (CASE WHEN coalesce(x1, 1) >= coalesce(y1, 1) THEN coalesce(x1, 1) ELSE y1 END)
           * (CASE WHEN coalesce(x2, 1) >= coalesce(y2, 1) THEN coalesce(x2, 1) ELSE y2 END)
           * (CASE WHEN coalesce(x3, 1) >= coalesce(y3, 1) THEN coalesce(x3, 1) ELSE y3 END)
           * (CASE WHEN coalesce(x4, 1) >= coalesce(y4, 1) THEN coalesce(x4, 1) ELSE y4 END)
           * (CASE WHEN coalesce(x5, 1) >= coalesce(y5, 1) THEN coalesce(x5, 1) ELSE y5 END)
         END AS broadcast,
         CASE WHEN d.event_index IS NULL THEN 1
              WHEN d.outside = 0 THEN x_elements / nullif(d.reduced_elements, 0) END AS reduce_out,
         -- channels: the weight's elements (else the last dimension) for layer norm and
         -- RMSNorm, the second dimension for batch and group norm
         CASE WHEN name = 'aten::native_layer_norm' OR model IN ('rms_norm', 'add_rms_norm')
              THEN coalesce(nullif(w_elements, 0), x0)
              ELSE x_channels END AS channels,
         CASE WHEN x_integral = 1 THEN 8 ELSE x_bytes END AS widened_bytes
  FROM reduced AS r
  LEFT JOIN reduce_dims AS d
    ON d.run = r.run AND d.phase = r.phase AND d.rank = r.rank AND d.trace_id = r.trace_id
   AND d.event_index = r.event_index
),
modeled AS (
  SELECT run, phase, rank, trace_id, event_index, name, family, dims AS shapes, a_type, dtype,
         CASE model
           WHEN 'unary' THEN x_elements
           WHEN 'binary' THEN broadcast
           WHEN 'gated' THEN 5 * out_elements
           WHEN 'norm' THEN 6 * channels + 2 * x_elements
                            + CASE WHEN training THEN 3 * x_elements ELSE 0 END
           WHEN 'rms_norm' THEN x_elements / nullif(channels, 0) * (2 * channels + 2)
                                + CASE WHEN w_elements > 0 THEN 2 ELSE 1 END * x_elements
           WHEN 'add_rms_norm' THEN x_elements
                                    + x_elements / nullif(channels, 0) * (2 * channels + 2)
                                    + 2 * x_elements
           WHEN 'rope' THEN 3 * (x_elements + y_elements) / nullif(head_size, 0) * w_last
           WHEN 'softmax' THEN 3 * x_elements
           WHEN 'cache_write' THEN 0
           ELSE x_elements
         END AS flops,
         CASE model
           WHEN 'unary' THEN x_elements * (x_bytes + coalesce(out_bytes, x_bytes))
           WHEN 'binary' THEN x_elements * x_bytes + y_elements * coalesce(y_bytes, 0)
                              + broadcast * coalesce(out_bytes,
                                                     CASE WHEN y_bytes > x_bytes AND y_rank > 0
                                                          THEN y_bytes ELSE x_bytes END)
           WHEN 'gated' THEN x_elements * x_bytes + out_elements * out_bytes
           WHEN 'cache_write' THEN 2 * (x_elements * x_bytes + y_elements * y_bytes)
           WHEN 'norm' THEN 2 * x_elements * x_bytes
                            + (2 + CASE WHEN w_elements > 0 THEN 1 ELSE 0 END
                               + CASE WHEN w_elements > 0 AND bias_elements > 0 THEN 1 ELSE 0 END
                               + CASE WHEN training THEN 2 ELSE 0 END) * channels * x_bytes
           WHEN 'rms_norm' THEN 2 * x_elements * x_bytes + w_elements * coalesce(w_bytes, 0)
           WHEN 'add_rms_norm' THEN 4 * x_elements * x_bytes + w_elements * coalesce(w_bytes, 0)
           WHEN 'rope' THEN 2 * (x_elements + y_elements) / nullif(head_size, 0) * w_last * x_bytes
                            + out_elements * w_last * w_bytes + out_elements * out_bytes
           WHEN 'scan' THEN x_elements * (x_bytes + widened_bytes)
           WHEN 'softmax' THEN x_elements * (x_bytes + CASE WHEN half_to_float THEN 4
                                                             ELSE x_bytes END)
           WHEN 'indexed' THEN x_elements * x_bytes + reduce_out * x_bytes
                               + CASE WHEN dim_list IS NOT NULL THEN reduce_out * 8 ELSE 0 END
           ELSE x_elements * x_bytes
                + reduce_out * CASE WHEN name IN ('aten::sum', 'aten::prod') THEN widened_bytes
                                    ELSE x_bytes END
         END AS bytes
  FROM shaped
  WHERE x_elements IS NOT NULL AND x_bytes IS NOT NULL
)
SELECT run, phase, rank, trace_id, event_index, name, family, 'forward' AS pass, shapes,
       a_type, dtype, flops, bytes
FROM modeled
WHERE flops IS NOT NULL;
