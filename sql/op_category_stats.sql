-- Which kind of computation takes the GPU time: the ops of op_stats rolled up by category (as
-- TraceLens's ops_summary_by_category), one row per run, phase, rank and category.
-- An op's category is that of the first rule below its name matches (a regular expression,
-- RE2; no match: other); an op that launched communication kernels (op_stats.communication,
-- by the kernel rules) is communication whatever its name. Categories: GEMM (matrix multiplies, grouped GEMMs),
-- CONV, SDPA (training-style fused attention: scaled_dot_product, flash-attention, aiter
-- fmha/mha), attention (inference attention: paged, unified, MLA, batch prefill, KV-cache
-- writes), MoE, norm (batch, layer, group, instance, RMS), elementwise (pointwise ops,
-- gated activations, RoPE, torch.compile's triton_poi_), reduce (sums, means, max/min,
-- scans, softmax, triton_red_/triton_per_), communication, memcpy (copies and fills:
-- aten::copy_, to, clone, fill_), other. GPU time is gpu_self_busy_ns (the GPU time each op
-- launched itself, TraceLens's direct kernel time), so no GPU time counts in two categories.
--
-- Reads: op_stats
--
-- Columns:
--   run, phase, rank    partition
--   category            GEMM, CONV, SDPA, attention, MoE, norm, elementwise, reduce,
--                       communication, memcpy or other
--   calls               calls of the category's ops that launched GPU activity themselves
--   gpu_self_busy_ns    their gpu_self_busy_ns summed, ns
--   share               gpu_self_busy_ns / that of all the rank's ops (DOUBLE; NULL when
--                       no op launched GPU activity)
CREATE OR REPLACE VIEW op_category_stats AS
WITH rules AS (
  SELECT *
  FROM (VALUES
    (0, 'communication', '(?i)(^nccl|^gloo|c10d|record_param_comms|all_?reduce|all_?gather'
                         || '|reduce_scatter|all_?to_?all)'),
    (1, 'attention', '(?i)(paged_attention|unified_attention|unified_mla|mla_decode|mla_prefill'
                     || '|mha_batch_prefill|decode_attention|extend_attention|store_cache'
                     || '|reshape_and_cache|cache_mla|kv_cache)'),
    (2, 'MoE', '(?i)(moe|fused_experts|topk_softmax|topk_sigmoid|grouped_topk)'),
    (3, 'GEMM', '(?i)(^aten::(mm|addmm|bmm|baddbmm|_scaled_mm|_addmm_activation|matmul|linear)$'
                || '|gemm|hipblaslt|cublas)'),
    (4, 'CONV', '(?i)(convolution|^aten::conv|conv[123]d)'),
    (5, 'SDPA', '(?i)(scaled_dot_product|flash_attn|flashattn|flash_attention'
                || '|efficient_attention|fmha|^aiter::mha_|fusedattn)'),
    (6, 'norm', '(?i)(norm)'),
    (7, 'memcpy', '^aten::(copy_|_to_copy|to|clone|contiguous|fill_|zero_|zeros|zeros_like'
                  || '|ones|ones_like|full|full_like|index_copy_)$'),
    (8, 'reduce', '(?i)(^aten::(sum|mean|max|min|amax|amin|argmax|argmin|prod|cumsum|cumprod'
                  || '|std|var|logsumexp|_softmax|softmax|_log_softmax|log_softmax|topk|sort'
                  || '|_softmax_backward_data|_log_softmax_backward_data)$|^triton_(red|per)_)'),
    (9, 'elementwise', '(?i)(^aten::(add|sub|rsub|mul|div|neg|abs|exp|log|sqrt|rsqrt'
                       || '|reciprocal|sin|cos|tanh|sigmoid|relu|gelu|silu|pow|clamp'
                       || '|clamp_min|clamp_max|maximum|minimum|where|hardtanh|leaky_relu'
                       || '|elu|threshold|native_dropout|dropout|masked_fill|sign|erf'
                       || '|softplus|lerp|addcmul|addcdiv)_?$|_backward$|_and_mul'
                       || '|rotary|rope|^triton_poi_)')
  ) AS r (priority, category, pattern)
),
stats AS (
  SELECT run, phase, rank, name, gpu_calls, gpu_self_busy_ns, communication FROM op_stats
),
matched AS (
  -- each name's first rule, matched once per name and not once per rank: a pattern read
  -- from a table is compiled anew for every pair it is tried on
  SELECT n.name, min(r.priority) AS priority
  FROM (SELECT DISTINCT name FROM stats) AS n
  JOIN rules AS r ON regexp_matches(n.name, r.pattern)
  GROUP BY n.name
),
categorised AS (
  SELECT s.run, s.phase, s.rank, s.gpu_calls, s.gpu_self_busy_ns,
         CASE WHEN s.communication THEN 0 ELSE coalesce(m.priority, 99) END AS choice
  FROM stats AS s
  LEFT JOIN matched AS m ON m.name = s.name
),
named AS (
  SELECT c.run, c.phase, c.rank, c.gpu_calls, c.gpu_self_busy_ns,
         coalesce(r.category, 'other') AS category
  FROM categorised AS c
  LEFT JOIN rules AS r ON r.priority = c.choice
),
totals AS (
  SELECT run, phase, rank, category, sum(gpu_calls) AS calls,
         sum(gpu_self_busy_ns) AS gpu_self_busy_ns
  FROM named
  GROUP BY run, phase, rank, category
)
SELECT run, phase, rank, category, CAST(calls AS BIGINT) AS calls,
       CAST(gpu_self_busy_ns AS BIGINT) AS gpu_self_busy_ns,
       gpu_self_busy_ns / nullif(CAST(sum(gpu_self_busy_ns)
                                      OVER (PARTITION BY run, phase, rank) AS DOUBLE), 0)
         AS share
FROM totals;
