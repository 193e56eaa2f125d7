-- FLOPs and bytes moved of each call of a modeled operator, from its recorded shapes: the
-- performance models op_perf measures calls against. GEMM, attention and convolution are
-- modeled here; the memory-bound ops (elementwise, norms, RoPE, reductions, KV-cache
-- writes) in _op_vector_models, inference attention in _op_inference_attention_models and
-- torch.compile's Triton kernels in _op_triton_models, MoE, grouped and vendor GEMMs in
-- _op_matrix_models, MoE layer ops (vllm::moe_forward) in _op_moe_layer_models, whose calls
-- this view adds.
-- A call is modeled when its cpu_op is one of the ops listed in `specs` below and its args
-- hold `Input Dims` (the profiler's record_shapes); a call whose shapes do not give the model's
-- dimensions is absent. One op per computation is modeled, the one that launches the GPU work
-- (aten::mm, not the aten::linear or aten::matmul around it; aten::convolution, not
-- aten::conv2d nor the cudnn_/miopen_convolution inside it), so a GEMM is never counted twice.
-- Shapes are the profiler's text (hostile content): a dimension that is not an integer, or a
-- result past BIGINT, makes the call absent. The arithmetic is in DOUBLE, so no shape can
-- overflow it: figures are exact up to 2^53 (9 x 10^15), the nearest double beyond.
-- Formulas (bytes use each tensor's element size from _dtypes):
--   GEMM (mm, addmm, bmm, baddbmm, _scaled_mm; aiter::gemm_a16w16 and
--   vllm::rocm_unquantized_gemm, whose B is the weight stored n x k): A [b,]m x k, B [b,]k x n:
--     flops = b (2 m n k + m n if a bias is added); bytes = b (m k + k n + m n) elements, plus
--     the bias tensor's elements; the output is A's type (2 bytes when A is 1 byte: fp8).
--   Attention (_scaled_dot_product_{flash,efficient,cudnn}_attention, [B, H, N, d] layout;
--   flash_attn::_flash_attn_{forward,backward}, FlashAttention-3's flash_attn_3::fwd and
--   flash_attn_3::_flash_attn_forward, aiter::mha_{fwd,bwd}, aiter::fmha_v3_fwd, [B, N, H, d]):
--     forward flops = 2 B Hq Nq Nkv (d_qk + d_v) (QK^T and PV), halved when causal and
--     Nq = Nkv; bytes = Q + K + V + O. Backward flops = 2 B Hq Nq Nkv (3 d_qk + 2 d_v) (QK^T
--     recomputed, dV, dP, dQ, dK), halved likewise, plus B Nkv (d_qk + d_v) (Hq / Hkv - 1)
--     for reducing grouped-query heads; bytes = Q + K + V + dO + dQ + dK + dV.
--   Convolution (aten::convolution, 1 to 3 spatial dims, groups, transposed): with F = 2
--     prod(weight[1:]) x (elements of the output; of the input when transposed), forward
--     flops = F + output elements with a bias; bytes = input + weight + output (+ bias).
--     aten::convolution_backward: F for each of the input and weight gradients its
--     output_mask asks for, plus output elements for the bias gradient; bytes = grad_output +
--     weight + input per gradient, grad_output + bias for the bias gradient.
--
-- Reads: cpu_ops, _dtypes, _op_vector_models, _op_inference_attention_models,
--   _op_triton_models, _op_matrix_models, _op_moe_layer_models
--
-- Columns:
--   run, phase, rank   partition
--   trace_id           the trace of the call
--   event_index        the call's cpu_op event
--   launch_phase       for a model that holds for one graph launch of a replayed op only
--                      (inference attention: the lengths of the replay's step), the
--                      replay's phase; NULL when the model holds for every run of the call
--   launch_trace_id    that graph launch's trace (NULL likewise)
--   launch_event_index that graph launch (runtime event; NULL likewise)
--   name               the op (aten::addmm, ...)
--   family             gemm, attention or convolution (and the other modules' families:
--                      moe, elementwise, norm, ...)
--   pass               forward or backward
--   shapes             the call's Input Dims, JSON text
--   input_type         the profiler's type of the first operand (c10::BFloat16, ...)
--   dtype              its peak class (bf16, fp32, ...; see _dtypes), NULL when unknown
--   flops              floating-point operations of the call (NULL: a Triton kernel
--                      without Inductor's kernel_flop)
--   bytes              bytes read and written by the model, NULL when a type is unknown
CREATE OR REPLACE VIEW _op_models AS
WITH specs AS (
  -- a, b, c: operand positions (GEMM: A, B; attention: Q, K, V; convolution: input,
  -- weight, grad_output); bias_at: the bias operand; causal_at: the is_causal argument;
  -- params_at: the convolution's stride (then padding, dilation, transposed,
  -- output_padding, groups and, backward, output_mask); b_nk: B is stored N x K (a weight
  -- the op multiplies transposed: aiter's and vLLM's GEMMs); bnhd: attention operands laid
  -- out [B, N, H, d] (flash-attention's and aiter's own ops).
  SELECT *, name IN ('aiter::gemm_a16w16', 'aiter::gemm_a16w16_asm',
                     'vllm::rocm_unquantized_gemm') AS b_nk,
         name LIKE 'flash\_attn%::%' ESCAPE '\' OR name LIKE 'aiter::%' AS bnhd
  FROM (VALUES
    ('aten::mm', 'gemm', 'forward', 0, 1, NULL, NULL, NULL, NULL),
    ('aten::addmm', 'gemm', 'forward', 1, 2, NULL, 0, NULL, NULL),
    ('aten::bmm', 'gemm', 'forward', 0, 1, NULL, NULL, NULL, NULL),
    ('aten::baddbmm', 'gemm', 'forward', 1, 2, NULL, 0, NULL, NULL),
    ('aten::_scaled_mm', 'gemm', 'forward', 0, 1, NULL, 4, NULL, NULL),
    ('aiter::gemm_a16w16', 'gemm', 'forward', 0, 1, NULL, 2, NULL, NULL),
    ('aiter::gemm_a16w16_asm', 'gemm', 'forward', 0, 1, NULL, 2, NULL, NULL),
    ('vllm::rocm_unquantized_gemm', 'gemm', 'forward', 0, 1, NULL, 2, NULL, NULL),
    ('aten::_scaled_dot_product_flash_attention', 'attention', 'forward', 0, 1, 2, NULL, 4, NULL),
    ('aten::_scaled_dot_product_efficient_attention', 'attention', 'forward', 0, 1, 2, NULL, 6,
     NULL),
    ('aten::_scaled_dot_product_cudnn_attention', 'attention', 'forward', 0, 1, 2, NULL, 6, NULL),
    ('aten::_scaled_dot_product_flash_attention_backward', 'attention', 'backward', 1, 2, 3, NULL,
     11, NULL),
    ('aten::_scaled_dot_product_efficient_attention_backward', 'attention', 'backward', 1, 2, 3,
     NULL, 11, NULL),
    ('aten::_scaled_dot_product_cudnn_attention_backward', 'attention', 'backward', 1, 2, 3, NULL,
     14, NULL),
    ('flash_attn::_flash_attn_forward', 'attention', 'forward', 0, 1, 2, NULL, 5, NULL),
    ('flash_attn_3::fwd', 'attention', 'forward', 0, 1, 2, NULL, 24, NULL),
    ('flash_attn_3::_flash_attn_forward', 'attention', 'forward', 0, 1, 2, NULL, 24, NULL),
    ('aiter::mha_fwd', 'attention', 'forward', 0, 1, 2, NULL, 5, NULL),
    ('aiter::fmha_v3_fwd', 'attention', 'forward', 0, 1, 2, NULL, 5, NULL),
    ('flash_attn::_flash_attn_backward', 'attention', 'backward', 1, 2, 3, NULL, 11, NULL),
    ('aiter::mha_bwd', 'attention', 'backward', 1, 2, 3, NULL, 8, NULL),
    ('aten::convolution', 'convolution', 'forward', 0, 1, NULL, 2, NULL, 3),
    ('aten::convolution_backward', 'convolution', 'backward', 1, 2, 0, NULL, NULL, 4)
  ) AS s (name, family, pass, a_at, b_at, c_at, bias_at, causal_at, params_at)
),
calls AS (
  SELECT o.run, o.phase, o.rank, o.trace_id, o.event_index, o.name, s.family, s.pass,
         json_extract(o.args, '$."Input Dims"') AS dims,
         json_extract(o.args, '$."Input type"') AS types,
         json_extract(o.args, '$."Concrete Inputs"') AS concrete,
         '$[' || CAST(s.a_at AS VARCHAR) || ']' AS a,
         '$[' || CAST(s.b_at AS VARCHAR) || ']' AS b,
         '$[' || CAST(s.c_at AS VARCHAR) || ']' AS c,
         '$[' || CAST(s.bias_at AS VARCHAR) || ']' AS bias,
         '$[' || CAST(s.causal_at AS VARCHAR) || ']' AS causal,
         s.params_at, s.b_nk, s.bnhd
  FROM cpu_ops AS o
  JOIN specs AS s ON s.name = o.name
  WHERE o.args LIKE '%"Input Dims"%'
),
operands AS (
  -- Each operand's dimensions (NULL past its rank), rank and type; the convolution's
  -- parameters as JSON text (the profiler writes '[16, 16]', 'False').
  SELECT run, phase, rank, trace_id, event_index, name, family, pass, b_nk, bnhd,
         CAST(dims AS VARCHAR) AS shapes,
         json_array_length(json_extract_string(dims, a)) AS a_rank,
         json_array_length(json_extract_string(dims, b)) AS b_rank,
         CAST(TRY_CAST(json_extract_string(dims, a || '[0]') AS BIGINT) AS DOUBLE) AS a0,
         CAST(TRY_CAST(json_extract_string(dims, a || '[1]') AS BIGINT) AS DOUBLE) AS a1,
         CAST(TRY_CAST(json_extract_string(dims, a || '[2]') AS BIGINT) AS DOUBLE) AS a2,
         CAST(TRY_CAST(json_extract_string(dims, a || '[3]') AS BIGINT) AS DOUBLE) AS a3,
         CAST(TRY_CAST(json_extract_string(dims, a || '[4]') AS BIGINT) AS DOUBLE) AS a4,
         CAST(TRY_CAST(json_extract_string(dims, b || '[0]') AS BIGINT) AS DOUBLE) AS b0,
         CAST(TRY_CAST(json_extract_string(dims, b || '[1]') AS BIGINT) AS DOUBLE) AS b1,
         CAST(TRY_CAST(json_extract_string(dims, b || '[2]') AS BIGINT) AS DOUBLE) AS b2,
         CAST(TRY_CAST(json_extract_string(dims, b || '[3]') AS BIGINT) AS DOUBLE) AS b3,
         CAST(TRY_CAST(json_extract_string(dims, b || '[4]') AS BIGINT) AS DOUBLE) AS b4,
         CAST(TRY_CAST(json_extract_string(dims, c || '[0]') AS BIGINT) AS DOUBLE) AS c0,
         CAST(TRY_CAST(json_extract_string(dims, c || '[1]') AS BIGINT) AS DOUBLE) AS c1,
         CAST(TRY_CAST(json_extract_string(dims, c || '[2]') AS BIGINT) AS DOUBLE) AS c2,
         CAST(TRY_CAST(json_extract_string(dims, c || '[3]') AS BIGINT) AS DOUBLE) AS c3,
         CAST(TRY_CAST(json_extract_string(dims, c || '[4]') AS BIGINT) AS DOUBLE) AS c4,
         CAST(TRY_CAST(json_extract_string(dims, bias || '[0]') AS BIGINT) AS DOUBLE) AS bias0,
         CAST(TRY_CAST(json_extract_string(dims, bias || '[1]') AS BIGINT) AS DOUBLE) AS bias1,
         CAST(TRY_CAST(json_extract_string(dims, bias || '[2]') AS BIGINT) AS DOUBLE) AS bias2,
         json_extract_string(types, a) AS a_type,
         json_extract_string(types, b) AS b_type,
         json_extract_string(types, c) AS c_type,
         json_extract_string(types, bias) AS bias_type,
         lower(json_extract_string(concrete, causal)) = 'true' AS is_causal,
         json_extract_string(concrete, '$[' || CAST(params_at AS VARCHAR) || ']') AS stride_text,
         json_extract_string(concrete, '$[' || CAST(params_at + 1 AS VARCHAR) || ']') AS padding_text,
         json_extract_string(concrete, '$[' || CAST(params_at + 2 AS VARCHAR) || ']') AS dilation_text,
         lower(json_extract_string(concrete, '$[' || CAST(params_at + 3 AS VARCHAR) || ']'))
           = 'true' AS transposed,
         json_extract_string(concrete, '$[' || CAST(params_at + 4 AS VARCHAR) || ']')
           AS output_padding_text,
         TRY_CAST(json_extract_string(concrete, '$[' || CAST(params_at + 5 AS VARCHAR) || ']')
           AS DOUBLE) AS groups,
         lower(json_extract_string(concrete, '$[' || CAST(params_at + 6 AS VARCHAR) || ']'))
           AS output_mask_text
  FROM calls
),
sized AS (
  SELECT o.*,
         ta.element_bytes AS a_bytes, ta.dtype,
         tb.element_bytes AS b_bytes,
         tc.element_bytes AS c_bytes,
         tbias.element_bytes AS bias_bytes,
         -- a bias operand is a tensor (a type the profiler names), not None ('')
         tbias.element_bytes IS NOT NULL AS has_bias,
         coalesce(o.bias0, 1) * coalesce(o.bias1, 1) * coalesce(o.bias2, 1) AS bias_elements
  FROM operands AS o
  LEFT JOIN _dtypes AS ta ON ta.input_type = o.a_type
  LEFT JOIN _dtypes AS tb ON tb.input_type = o.b_type
  LEFT JOIN _dtypes AS tc ON tc.input_type = o.c_type
  LEFT JOIN _dtypes AS tbias ON tbias.input_type = o.bias_type
),
gemm AS (
  SELECT *,
         CASE WHEN a_rank = 3 THEN a0 ELSE 1 END AS g_batch,
         CASE WHEN a_rank = 3 THEN a1 ELSE a0 END AS g_m,
         CASE WHEN a_rank = 3 THEN a2 ELSE a1 END AS g_k,
         CASE WHEN b_nk THEN b0 WHEN b_rank = 3 THEN b2 ELSE b1 END AS g_n
  FROM sized
  WHERE family = 'gemm' AND a_rank IN (2, 3) AND b_rank = a_rank
    AND NOT (b_nk AND a_rank <> 2)
),
gemm_model AS (
  SELECT run, phase, rank, trace_id, event_index, name, family, pass, shapes, a_type, dtype,
         g_batch * (2 * g_m * g_n * g_k + CASE WHEN has_bias THEN g_m * g_n ELSE 0 END) AS flops,
         g_batch * (g_m * g_k * a_bytes + g_k * g_n * b_bytes
                    + g_m * g_n * CASE WHEN a_bytes = 1 THEN 2 ELSE a_bytes END)
           + CASE WHEN has_bias THEN bias_elements * bias_bytes ELSE 0 END AS bytes
  FROM gemm
),
attention AS (
  -- Q [B, Hq, Nq, d_qk], K [B, Hkv, Nkv, d_qk], V [B, Hkv, Nkv, d_v] (flash-attention's own
  -- ops: [B, N, H, d]); causal halving when the attention matrix is square (a factor 1
  -- instead of 2, exact).
  SELECT *,
         CASE WHEN is_causal AND nq = nkv THEN 1 ELSE 2 END AS matmul_factor,
         a0 * a1 * a2 * a3 AS q_elements,
         b0 * b1 * b2 * b3 AS k_elements,
         c0 * c1 * c2 * c3 AS v_elements,
         a0 * a1 * a2 * c3 AS o_elements
  FROM (
    SELECT *,
           CASE WHEN bnhd THEN a2 ELSE a1 END AS hq, CASE WHEN bnhd THEN a1 ELSE a2 END AS nq,
           CASE WHEN bnhd THEN b2 ELSE b1 END AS hkv, CASE WHEN bnhd THEN b1 ELSE b2 END AS nkv
    FROM sized
    WHERE family = 'attention' AND a_rank = 4 AND b_rank = 4 AND c3 IS NOT NULL
  ) AS laid_out
),
attention_model AS (
  SELECT run, phase, rank, trace_id, event_index, name, family, pass, shapes, a_type, dtype,
         CASE WHEN pass = 'forward'
              THEN matmul_factor * a0 * hq * nq * nkv * (a3 + c3)
              ELSE matmul_factor * a0 * hq * nq * nkv * (3 * a3 + 2 * c3)
                   + a0 * nkv * (a3 + c3) * (hq - hkv) / hkv
         END AS flops,
         CASE WHEN pass = 'forward'
              THEN q_elements * a_bytes + k_elements * b_bytes + v_elements * c_bytes
                   + o_elements * a_bytes
              ELSE 2 * (q_elements * a_bytes + k_elements * b_bytes + v_elements * c_bytes)
                   + o_elements * a_bytes
         END AS bytes
  FROM attention
),
conv AS (
  -- The parameters as JSON when they are lists of integers (or of booleans: output_mask),
  -- else NULL: the profiler's text is parsed only then.
  SELECT *,
         CASE WHEN regexp_matches(stride_text, '^\[[0-9, ]*\]$') THEN stride_text END AS stride,
         CASE WHEN regexp_matches(padding_text, '^\[[0-9, ]*\]$') THEN padding_text END
           AS padding,
         CASE WHEN regexp_matches(dilation_text, '^\[[0-9, ]*\]$') THEN dilation_text END
           AS dilation,
         CASE WHEN regexp_matches(output_padding_text, '^\[[0-9, ]*\]$')
              THEN output_padding_text END AS output_padding,
         CASE WHEN regexp_matches(output_mask_text, '^\[(true|false)(, *(true|false))*\]$')
              THEN output_mask_text END AS output_mask,
         coalesce(a2, 1) * coalesce(a3, 1) * coalesce(a4, 1) AS x_spatial,
         coalesce(b2, 1) * coalesce(b3, 1) * coalesce(b4, 1) AS k_spatial,
         coalesce(c2, 1) * coalesce(c3, 1) * coalesce(c4, 1) AS go_spatial
  FROM sized
  WHERE family = 'convolution' AND a_rank BETWEEN 3 AND 5 AND b_rank = a_rank
),
conv_dims AS (
  -- per spatial dimension j (input dimension 2 + j): stride, padding, dilation, output
  -- padding (a single value stands for every dimension), kernel size and output size.
  SELECT *,
         TRY_CAST(coalesce(json_extract_string(stride, '$[0]'), '1') AS DOUBLE) AS s0,
         TRY_CAST(coalesce(json_extract_string(stride, '$[1]'),
                       json_extract_string(stride, '$[0]'), '1') AS DOUBLE) AS s1,
         TRY_CAST(coalesce(json_extract_string(stride, '$[2]'),
                       json_extract_string(stride, '$[0]'), '1') AS DOUBLE) AS s2,
         TRY_CAST(coalesce(json_extract_string(padding, '$[0]'), '0') AS DOUBLE) AS p0,
         TRY_CAST(coalesce(json_extract_string(padding, '$[1]'),
                       json_extract_string(padding, '$[0]'), '0') AS DOUBLE) AS p1,
         TRY_CAST(coalesce(json_extract_string(padding, '$[2]'),
                       json_extract_string(padding, '$[0]'), '0') AS DOUBLE) AS p2,
         TRY_CAST(coalesce(json_extract_string(dilation, '$[0]'), '1') AS DOUBLE) AS d0,
         TRY_CAST(coalesce(json_extract_string(dilation, '$[1]'),
                       json_extract_string(dilation, '$[0]'), '1') AS DOUBLE) AS d1,
         TRY_CAST(coalesce(json_extract_string(dilation, '$[2]'),
                       json_extract_string(dilation, '$[0]'), '1') AS DOUBLE) AS d2,
         TRY_CAST(coalesce(json_extract_string(output_padding, '$[0]'), '0') AS DOUBLE) AS op0,
         TRY_CAST(coalesce(json_extract_string(output_padding, '$[1]'),
                       json_extract_string(output_padding, '$[0]'), '0') AS DOUBLE) AS op1,
         TRY_CAST(coalesce(json_extract_string(output_padding, '$[2]'),
                       json_extract_string(output_padding, '$[0]'), '0') AS DOUBLE) AS op2,
         CASE WHEN transposed THEN b1 * coalesce(groups, 1) ELSE b0 END AS out_channels
  FROM conv
),
conv_out AS (
  -- forward: the output's spatial size (1 past the input's rank)
  SELECT *,
         CASE WHEN a2 IS NULL THEN 1
              WHEN transposed THEN (a2 - 1) * s0 - 2 * p0 + d0 * (b2 - 1) + op0 + 1
              ELSE floor((a2 + 2 * p0 - d0 * (b2 - 1) - 1) / s0) + 1 END
         * CASE WHEN a3 IS NULL THEN 1
                WHEN transposed THEN (a3 - 1) * s1 - 2 * p1 + d1 * (b3 - 1) + op1 + 1
                ELSE floor((a3 + 2 * p1 - d1 * (b3 - 1) - 1) / s1) + 1 END
         * CASE WHEN a4 IS NULL THEN 1
                WHEN transposed THEN (a4 - 1) * s2 - 2 * p2 + d2 * (b4 - 1) + op2 + 1
                ELSE floor((a4 + 2 * p2 - d2 * (b4 - 1) - 1) / s2) + 1 END
           AS out_spatial,
         a0 * a1 * x_spatial AS x_elements,
         b0 * b1 * k_spatial AS w_elements
  FROM conv_dims
),
conv_sizes AS (
  SELECT *,
         CASE WHEN pass = 'forward' THEN a0 * out_channels * out_spatial
              ELSE c0 * c1 * go_spatial END AS out_elements,
         CASE WHEN pass = 'backward' THEN coalesce(json_extract_string(output_mask, '$[0]'),
                                                   'true') = 'true' END AS input_grad,
         CASE WHEN pass = 'backward' THEN coalesce(json_extract_string(output_mask, '$[1]'),
                                                   'true') = 'true' END AS weight_grad,
         CASE WHEN pass = 'backward' THEN json_extract_string(output_mask, '$[2]') = 'true'
         END AS bias_grad
  FROM conv_out
),
conv_flops AS (
  SELECT *,
         2 * b1 * k_spatial * CASE WHEN transposed THEN x_elements ELSE out_elements END
           AS conv_flops,
         CASE WHEN input_grad THEN 1 ELSE 0 END + CASE WHEN weight_grad THEN 1 ELSE 0 END
           AS gradients
  FROM conv_sizes
),
conv_model AS (
  SELECT run, phase, rank, trace_id, event_index, name, family, pass, shapes, a_type, dtype,
         CASE WHEN pass = 'forward'
              THEN conv_flops + CASE WHEN has_bias THEN out_elements ELSE 0 END
              ELSE gradients * conv_flops + CASE WHEN bias_grad THEN out_elements ELSE 0 END
         END AS flops,
         CASE WHEN pass = 'forward'
              THEN x_elements * a_bytes + w_elements * b_bytes + out_elements * a_bytes
                   + CASE WHEN has_bias THEN out_channels * bias_bytes ELSE 0 END
              ELSE gradients * (out_elements * c_bytes + w_elements * b_bytes
                                + x_elements * a_bytes)
                   + CASE WHEN bias_grad THEN (out_elements + c1) * c_bytes ELSE 0 END
         END AS bytes
  FROM conv_flops
),
shape_models AS (
  SELECT * FROM gemm_model
  UNION ALL
  SELECT * FROM attention_model
  UNION ALL
  SELECT * FROM conv_model
  UNION ALL
  SELECT run, phase, rank, trace_id, event_index, name, family, pass, shapes, a_type, dtype,
         flops, bytes
  FROM _op_vector_models
  UNION ALL
  SELECT run, phase, rank, trace_id, event_index, name, family, pass, shapes, a_type, dtype,
         flops, bytes
  FROM _op_triton_models
  UNION ALL
  SELECT run, phase, rank, trace_id, event_index, name, family, pass, shapes, a_type, dtype,
         flops, bytes
  FROM _op_matrix_models
  UNION ALL
  SELECT run, phase, rank, trace_id, event_index, name, family, pass, shapes, a_type, dtype,
         flops, bytes
  FROM _op_moe_layer_models
),
models AS (
  -- the models of the shapes alone hold for every run of a call; inference attention's,
  -- from the annotation of the step, for one graph launch when replayed
  SELECT run, phase, rank, trace_id, event_index, CAST(NULL AS VARCHAR) AS launch_phase,
         CAST(NULL AS VARCHAR) AS launch_trace_id, CAST(NULL AS BIGINT) AS launch_event_index,
         name, family, pass, shapes, a_type, dtype, flops, bytes
  FROM shape_models
  UNION ALL
  SELECT run, phase, rank, trace_id, event_index, launch_phase, launch_trace_id,
         launch_event_index, name, family, pass, shapes, a_type, dtype, flops, bytes
  FROM _op_inference_attention_models
)
SELECT run, phase, rank, trace_id, event_index, launch_phase, launch_trace_id,
       launch_event_index, name, family, pass, shapes,
       a_type AS input_type, dtype, TRY_CAST(flops AS BIGINT) AS flops,
       TRY_CAST(bytes AS BIGINT) AS bytes
FROM models
WHERE (TRY_CAST(flops AS BIGINT) >= 0 OR (family = 'triton' AND flops IS NULL))
  AND NOT coalesce(bytes < 0, false);
