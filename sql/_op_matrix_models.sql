-- FLOPs and bytes moved of each call of a mixture-of-experts operator (fused, and the up and
-- down stages of an unfused one), a grouped GEMM, or a vendor GEMM whose operands are
-- transposed by flags (TransformerEngine's, hipBLASLt's): the matrix models beside
-- _op_models's GEMM, attention and convolution. The op-name matchers and the operand
-- positions each model reads are the `specs` rows below (the data); the formulas are the
-- model columns of `modeled`. As in _op_models: a call needs `Input Dims`, shapes that are
-- not integers make it absent, the arithmetic is DOUBLE.
-- MoE (TraceLens's formulas): M tokens (x's first dimension), K the hidden size (w2's
-- dimension 1), N the intermediate size (w2's dimension 2, times K / w1's last dimension
-- when the weights are packed two to a byte), E experts (w2's dimension 0), t experts per
-- token (topk_dims: dimension 1 of that operand; topk_value: that Concrete Input), gated
-- (SwiGLU: w1's dimension 1 is 2 N) g = 2, else 1. The experts a batch reaches are
-- counted by the uniform-routing expectation E_active = E (1 - ((E - t) / E)^M); their
-- weights are read once, as stored (w elements x their type's size x E_active / E).
--   fused_moe   flops = 2 M K N t (g + 1) + M K (2 t - 1) (up and gate, down, the weighted
--               sum of the t outputs); bytes = x + active w1 and w2 + out (M K; out_at's
--               type, else x's)
--   moe_up      flops = 2 M K N t g; bytes = x + active w1 + out (out_at's elements and type)
--   moe_down    flops = 2 M K N t; bytes = x ([M, t, N]) + active w2 + out (out_at's)
--   grouped     X [M, K], W [G, K, N] or [G, N, K]: flops = 2 M K N; bytes = X + W +
--               M N in X's type (2 bytes when X is 1 byte: fp8)
--   te_gemm     tex_ts::te_gemm_ts (A at 0, B at 5, out at 10, bias at 18; transa and
--               transb are Concrete Inputs 4 and 9, '1' when set): M, K = A's (1, 0)
--               dimensions, swapped when transa; N = B's dimension 0 (1 when transb);
--               flops = 2 M N K (+ M N with a bias); bytes = A + B + out (M N, out's type)
--               + N bias elements
--   hipblaslt   hipBLASLt's FP8 GEMM (A at 0, B at 2; transA, transB, transC Concrete
--               Inputs 5, 6, 7; transC swaps A and B and their flags): M, K = A's (0, 1),
--               swapped when transA; N = B's dimension 1 (0 when transB); flops = 2 M N K;
--               bytes = A + B + M N (2 bytes when A is 1 byte)
--
-- Reads: cpu_ops, _dtypes
--
-- Columns:
--   run, phase, rank   partition
--   trace_id           the trace of the call
--   event_index        the call's cpu_op event
--   name               the op (vllm::rocm_aiter_fused_moe, ...)
--   family             moe or gemm
--   pass               forward
--   shapes             the call's Input Dims, JSON text
--   a_type             the profiler's type of x (A for a GEMM)
--   dtype              its peak class (see _dtypes), NULL when unknown
--   flops              floating-point operations of the call (DOUBLE)
--   bytes              bytes read and written (DOUBLE), NULL when a type is unknown
CREATE OR REPLACE VIEW _op_matrix_models AS
WITH specs AS (
  -- x_at: tokens (MoE) or A; w1_at: MoE's gate/up weight or B; w2_at: MoE's down weight;
  -- out_at: the output; topk_dims: the operand whose dimension 1 is t; topk_value: the
  -- Concrete Input that is t; bias_at: the bias; trans_a_at, trans_b_at, trans_c_at: the
  -- Concrete Inputs that are the transpose flags ('1' or 'True' when set).
  SELECT *
  FROM (VALUES
    ('vllm::rocm_aiter_fused_moe', 'moe', 'fused_moe',
     0, 1, 2, NULL, 3, NULL, NULL, NULL, NULL, NULL),
    ('aiter::fmoe_g1u1', 'moe', 'fused_moe',
     1, 2, 3, 0, NULL, 8, NULL, NULL, NULL, NULL),
    ('aiter::fmoe_fp8_blockscale_g1u1', 'moe', 'fused_moe',
     1, 2, 3, 0, NULL, 8, NULL, NULL, NULL, NULL),
    ('aiter::ck_moe_stage1', 'moe', 'moe_up',
     0, 1, 2, 6, 6, NULL, NULL, NULL, NULL, NULL),
    ('aiter::ck_moe_stage2', 'moe', 'moe_down',
     0, 1, 2, 6, 0, NULL, NULL, NULL, NULL, NULL),
    ('primus_turbo::grouped_gemm', 'gemm', 'grouped',
     0, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    ('primus_turbo::grouped_gemm_impl', 'gemm', 'grouped',
     0, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    ('primus_turbo_cpp_extension::grouped_gemm', 'gemm', 'grouped',
     0, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    ('primus_turbo_cpp_extension::ck_grouped_gemm', 'gemm', 'grouped',
     0, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    ('tex_ts::te_gemm_ts', 'gemm', 'te_gemm',
     0, 5, NULL, 10, NULL, NULL, 18, 4, 9, NULL),
    ('primus_turbo::hipblaslt_gemm_fp8', 'gemm', 'hipblaslt',
     0, 2, NULL, NULL, NULL, NULL, NULL, 5, 6, 7),
    ('primus_turbo_cpp_extension::hipblaslt_gemm_fp8', 'gemm', 'hipblaslt',
     0, 2, NULL, NULL, NULL, NULL, NULL, 5, 6, 7)
  ) AS s (name, family, model, x_at, w1_at, w2_at, out_at, topk_dims, topk_value, bias_at,
          trans_a_at, trans_b_at, trans_c_at)
),
calls AS (
  SELECT o.run, o.phase, o.rank, o.trace_id, o.event_index, s.*,
         '$[' || CAST(s.x_at AS VARCHAR) || ']' AS x_p,
         '$[' || CAST(s.w1_at AS VARCHAR) || ']' AS w1_p,
         '$[' || CAST(s.w2_at AS VARCHAR) || ']' AS w2_p,
         '$[' || CAST(s.out_at AS VARCHAR) || ']' AS out_p,
         '$[' || CAST(s.topk_dims AS VARCHAR) || '][1]' AS topk_p,
         '$[' || CAST(s.topk_value AS VARCHAR) || ']' AS topk_v,
         '$[' || CAST(s.bias_at AS VARCHAR) || ']' AS bias_p,
         '$[' || CAST(s.trans_a_at AS VARCHAR) || ']' AS flag1_p,
         '$[' || CAST(s.trans_b_at AS VARCHAR) || ']' AS flag2_p,
         '$[' || CAST(s.trans_c_at AS VARCHAR) || ']' AS flag3_p, o.args
  FROM cpu_ops AS o
  JOIN specs AS s ON s.name = o.name
  WHERE o.args LIKE '%"Input Dims"%'
),
parsed AS (
  SELECT *, CAST(json_extract(args, '$."Input Dims"') AS VARCHAR) AS dims,
         CAST(json_extract(args, '$."Input type"') AS VARCHAR) AS types,
         CAST(json_extract(args, '$."Concrete Inputs"') AS VARCHAR) AS concrete
  FROM calls
),
operands AS (
  -- dimension j of the operand at position p: dims[p][j] (NULL past its rank)
  SELECT *,
         CAST(TRY_CAST(json_extract_string(dims, x_p || '[0]') AS BIGINT) AS DOUBLE)
           AS x0,
         CAST(TRY_CAST(json_extract_string(dims, x_p || '[1]') AS BIGINT) AS DOUBLE)
           AS x1,
         CAST(TRY_CAST(json_extract_string(dims, x_p || '[2]') AS BIGINT) AS DOUBLE)
           AS x2,
         CAST(TRY_CAST(json_extract_string(dims, w1_p || '[0]') AS BIGINT) AS DOUBLE)
           AS w10,
         CAST(TRY_CAST(json_extract_string(dims, w1_p || '[1]') AS BIGINT) AS DOUBLE)
           AS w11,
         CAST(TRY_CAST(json_extract_string(dims, w1_p || '[2]') AS BIGINT) AS DOUBLE)
           AS w12,
         CAST(TRY_CAST(json_extract_string(dims, w2_p || '[0]') AS BIGINT) AS DOUBLE)
           AS w20,
         CAST(TRY_CAST(json_extract_string(dims, w2_p || '[1]') AS BIGINT) AS DOUBLE)
           AS w21,
         CAST(TRY_CAST(json_extract_string(dims, w2_p || '[2]') AS BIGINT) AS DOUBLE)
           AS w22,
         CAST(TRY_CAST(json_extract_string(dims, out_p || '[0]') AS BIGINT) AS DOUBLE)
           AS o0,
         CAST(TRY_CAST(json_extract_string(dims, out_p || '[1]') AS BIGINT) AS DOUBLE)
           AS o1,
         CAST(TRY_CAST(json_extract_string(dims, out_p || '[2]') AS BIGINT) AS DOUBLE)
           AS o2,
         json_array_length(json_extract_string(dims, x_p)) AS x_rank,
         json_array_length(json_extract_string(dims, w1_p)) AS w1_rank,
         json_array_length(json_extract_string(dims, w2_p)) AS w2_rank,
         coalesce(CAST(TRY_CAST(json_extract_string(dims, topk_p)
                                AS BIGINT) AS DOUBLE),
                  TRY_CAST(json_extract_string(concrete, topk_v) AS DOUBLE))
           AS topk,
         json_extract_string(types, x_p) AS a_type,
         json_extract_string(types, w1_p) AS w1_type,
         json_extract_string(types, w2_p) AS w2_type,
         json_extract_string(types, out_p) AS out_type,
         json_extract_string(types, bias_p) AS bias_type,
         lower(json_extract_string(concrete, flag1_p)) IN ('1', 'true')
           AS flag1,
         lower(json_extract_string(concrete, flag2_p)) IN ('1', 'true')
           AS flag2,
         lower(json_extract_string(concrete, flag3_p)) IN ('1', 'true')
           AS flag3
  FROM parsed
),
sized AS (
  SELECT o.*, tx.element_bytes AS x_bytes, tx.dtype, t1.element_bytes AS w1_bytes,
         t2.element_bytes AS w2_bytes, tout.element_bytes AS out_bytes,
         tb.element_bytes AS bias_bytes
  FROM operands AS o
  LEFT JOIN _dtypes AS tx ON tx.input_type = o.a_type
  LEFT JOIN _dtypes AS t1 ON t1.input_type = o.w1_type
  LEFT JOIN _dtypes AS t2 ON t2.input_type = o.w2_type
  LEFT JOIN _dtypes AS tout ON tout.input_type = o.out_type
  LEFT JOIN _dtypes AS tb ON tb.input_type = o.bias_type
),
moe AS (
  SELECT *,
         x0 AS m, w21 AS k, w22 * (w21 / w12) AS n, w20 AS experts,
         CASE WHEN w11 = 2 * w22 * (w21 / w12) THEN 2 ELSE 1 END AS g,
         -- the share of the experts a batch of x0 tokens reaches under uniform routing
         1 - power((w20 - topk) / w20, x0) AS active
  FROM sized
  WHERE family = 'moe' AND w1_rank = 3 AND w2_rank = 3 AND topk > 0 AND w20 >= topk
    AND w12 > 0
),
moe_model AS (
  SELECT *,
         CASE model
           WHEN 'fused_moe' THEN 2 * m * k * n * topk * (g + 1) + m * k * (2 * topk - 1)
           WHEN 'moe_up' THEN 2 * m * k * n * topk * g
           ELSE 2 * m * k * n * topk
         END AS flops,
         x0 * x1 * coalesce(x2, 1) * x_bytes
         + active * CASE model
             WHEN 'fused_moe' THEN w10 * w11 * w12 * w1_bytes + w20 * w21 * w22 * w2_bytes
             WHEN 'moe_up' THEN w10 * w11 * w12 * w1_bytes
             ELSE w20 * w21 * w22 * w2_bytes
           END
         + CASE WHEN out_at IS NULL THEN m * k * x_bytes
                ELSE o0 * o1 * coalesce(o2, 1) * out_bytes END AS bytes
  FROM moe
),
grouped AS (
  SELECT *, x0 AS m, x1 AS k,
         CASE WHEN w11 = x1 THEN w12 WHEN w12 = x1 THEN w11 END AS n
  FROM sized
  WHERE model = 'grouped' AND x_rank = 2 AND w1_rank = 3
),
transposed AS (
  -- the GEMMs with transpose flags: (M, K) from A, N from B; hipBLASLt's transC swaps
  -- the operands and their flags
  SELECT *,
         CASE WHEN model = 'te_gemm' THEN CASE WHEN flag1 THEN x0 ELSE x1 END
              WHEN flag3 THEN CASE WHEN flag2 THEN w10 ELSE w11 END
              ELSE CASE WHEN flag1 THEN x1 ELSE x0 END END AS m,
         CASE WHEN model = 'te_gemm' THEN CASE WHEN flag1 THEN x1 ELSE x0 END
              WHEN flag3 THEN CASE WHEN flag2 THEN w11 ELSE w10 END
              ELSE CASE WHEN flag1 THEN x0 ELSE x1 END END AS k,
         CASE WHEN model = 'te_gemm' THEN CASE WHEN flag2 THEN w11 ELSE w10 END
              WHEN flag3 THEN CASE WHEN flag1 THEN x1 ELSE x0 END
              ELSE CASE WHEN flag2 THEN w10 ELSE w11 END END AS n
  FROM sized
  WHERE model IN ('te_gemm', 'hipblaslt') AND x_rank = 2 AND w1_rank = 2
),
gemm_model AS (
  SELECT *,
         2 * m * n * k + CASE WHEN bias_bytes IS NOT NULL THEN m * n ELSE 0 END AS flops,
         x0 * x1 * x_bytes + CASE WHEN model = 'grouped' THEN w10 * w11 * w12
                                  ELSE w10 * w11 END * w1_bytes
         + m * n * CASE WHEN model = 'te_gemm' THEN out_bytes
                        WHEN x_bytes = 1 THEN 2 ELSE x_bytes END
         + CASE WHEN bias_bytes IS NOT NULL THEN n * bias_bytes ELSE 0 END AS bytes
  FROM (SELECT run, phase, rank, trace_id, event_index, name, family, model, dims, a_type,
               dtype, x0, x1, w10, w11, w12, x_bytes, w1_bytes, out_bytes, bias_bytes, m, k, n
        FROM grouped
        UNION ALL
        SELECT run, phase, rank, trace_id, event_index, name, family, model, dims, a_type,
               dtype, x0, x1, w10, w11, w12, x_bytes, w1_bytes, out_bytes, bias_bytes, m, k, n
        FROM transposed) AS g
),
modeled AS (
  SELECT run, phase, rank, trace_id, event_index, name, family, dims, a_type, dtype, flops,
         bytes
  FROM moe_model
  UNION ALL
  SELECT run, phase, rank, trace_id, event_index, name, family, dims, a_type, dtype, flops,
         bytes
  FROM gemm_model
)
SELECT run, phase, rank, trace_id, event_index, name, family, 'forward' AS pass,
       dims AS shapes, a_type, dtype, flops, bytes
FROM modeled
WHERE flops IS NOT NULL;
