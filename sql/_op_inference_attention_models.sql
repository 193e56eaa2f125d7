-- FLOPs and bytes moved of each call of an inference attention operator (a batch of requests
-- of different lengths in one kernel: varlen, unified, paged and MLA attention), whose shapes
-- give the heads and head sizes but not the sequences: those come from the iteration's
-- annotation, a user_annotation on the call's thread enclosing it (the innermost), in one of
-- the engines' detailed step formats:
--   vLLM    execute_<tokens>_context_<r>(sq<c_sq>sk<c_sk>sqsq<c_sqsq>sqsk<c_sqsk>)
--           _generation_<r>(sq<g_sq>sk<g_sk>sqsq<g_sqsq>sqsk<g_sqsk>)
--   SGLang  step[EXTEND|DECODE|MIXED bs=.. c_sq=.. c_sk=.. c_sqsq=.. c_sqsk=.. g_sq=.. ...]
--           (a key it does not write is 0)
--   ATOM    prefill[bs=.. tok=<sq> .. sqsq=.. sqsk=.. sk=..] (the context terms) or
--           decode[...] (the generation terms)
-- with, over the context (prefill) and generation (decode) requests, sq the query tokens,
-- sk the key/value tokens, sqsq the sum of sq^2 and sqsk the sum of sq x sk. A captured op
-- whose kernels a graph launch replayed (graph_replay_kernels: a captured launch on its
-- thread within the call) ran in the replay's step: its lengths are
-- those of the annotation enclosing the graph launch, one row per launch (launch_*
-- columns), and it has no row of its own in the capture. A call without such an annotation
-- is absent.
-- Shapes: Q [tokens, Hq, d_qk] at q_at; Hkv is dimension hkv_dim of K (at k_at; negative:
-- from the end), so that a paged cache's pages and page size are skipped; d_v is V's last
-- dimension (v_at), d_qk when the op has no V of that layout (paged decode's cache, MLA's
-- latent cache: its 576 = 512 + 64 rope dimensions, as TraceLens counts them). The cached
-- K and V are sized in K's type (a FP8 cache is 1 byte).
-- decode_only: the kernel runs generation requests only (its context terms are 0).
-- window_at: the Concrete Input that is the sliding window W (<= 0: none); with one, each
-- generation request attends to at most W keys, which the sums can only bound:
-- min(g_sk, g_sq W) and min(g_sqsk, g_sq W) (TraceLens's cap).
-- Formulas (TraceLens's InferenceAttention; context attention is causal within the chunk):
--   flops = Hq (d_qk + d_v) (2 c_sqsk - c_sqsq + 2 g_sqsk)
--   bytes = (c_sq + g_sq) (Hq (d_qk + d_v) + Hkv (d_qk + d_v)) x Q's size (Q, output and the
--           new tokens' K, V) + ((c_sk - c_sq) + (g_sk - g_sq)) Hkv (d_qk + d_v) x K's size
--           (the cached K, V)
--
-- Reads: cpu_ops, runtime, graph_replay_kernels, _dtypes
--
-- Columns:
--   run, phase, rank     partition (of the call: the capture's for a replayed op)
--   trace_id             the trace of the call
--   event_index          the call's cpu_op event
--   launch_phase         the replay's phase, for a replayed op (else NULL)
--   launch_trace_id      the replay's trace (else NULL)
--   launch_event_index   the graph launch whose annotation gave the lengths (else NULL)
--   name                 the op (aiter::mha_batch_prefill, ...)
--   family               attention
--   pass                 forward
--   shapes               the call's Input Dims, JSON text
--   a_type               the profiler's type of Q
--   dtype                its peak class (see _dtypes), NULL when unknown
--   flops                floating-point operations of the call (DOUBLE)
--   bytes                bytes read and written (DOUBLE), NULL when a type is unknown
CREATE OR REPLACE VIEW _op_inference_attention_models AS
WITH specs AS (
  SELECT *
  FROM (VALUES
    ('aiter::mha_batch_prefill', 0, 1, 2, -2, false, NULL),
    ('aiter::mha_varlen_fwd', 0, 1, 2, -2, false, NULL),
    ('aiter::fmha_v3_varlen_fwd', 0, 1, 2, -2, false, NULL),
    ('flash_attn::_flash_attn_varlen_forward', 0, 1, 2, -2, false, NULL),
    ('vllm::unified_attention_with_output', 0, 1, 2, -2, false, NULL),
    ('vllm::unified_attention', 0, 1, 2, -2, false, NULL),
    ('aiter::paged_attention_ragged', 2, 3, 4, -2, false, NULL),
    ('sglang_profiler::attention_paged_attention_ragged', 2, 3, 4, -2, false, NULL),
    ('aiter::pa_decode_gluon', 0, 2, NULL, 1, true, 19),
    ('aiter::mla_decode_stage1_asm_fwd', 0, 1, NULL, -2, false, NULL),
    ('aiter::mla_prefill_ps_asm_fwd', 0, 1, 2, -2, false, NULL)
  ) AS s (name, q_at, k_at, v_at, hkv_dim, decode_only, window_at)
),
calls AS (
  SELECT o.run, o.phase, o.rank, o.trace_id, o.event_index, o.name, o.pid, o.tid, o.ts_ns,
         o.dur_ns, s.decode_only,
         json_extract_string(o.args, '$."Input type"[' || CAST(s.q_at AS VARCHAR) || ']')
           AS a_type,
         json_extract_string(o.args, '$."Input type"[' || CAST(s.k_at AS VARCHAR) || ']')
           AS kv_type,
         CAST(json_extract(o.args, '$."Input Dims"') AS VARCHAR) AS dims,
         '$[' || CAST(s.q_at AS VARCHAR) || ']' AS q_p,
         '$[' || CAST(s.k_at AS VARCHAR) || ']' AS k_p,
         '$[' || CAST(s.v_at AS VARCHAR) || ']' AS v_p,
         s.hkv_dim,
         TRY_CAST(json_extract_string(o.args, '$."Concrete Inputs"['
                                      || CAST(s.window_at AS VARCHAR) || ']') AS BIGINT)
           AS window_size
  FROM specs AS s
  JOIN cpu_ops AS o ON o.name = s.name AND o.args LIKE '%"Input Dims"%'
),
pattern AS (
  SELECT '^execute_[0-9]+_context_[0-9]+\(sq([0-9]+)sk([0-9]+)sqsq([0-9]+)sqsk([0-9]+)\)'
         || '_generation_[0-9]+\(sq([0-9]+)sk([0-9]+)sqsq([0-9]+)sqsk([0-9]+)\)' AS vllm
),
annotations AS (
  -- the format of each detailed step annotation: vllm, sglang, or ATOM's prefill or decode
  SELECT a.run, a.phase, a.rank, a.trace_id, a.pid, a.tid, a.ts_ns, a.dur_ns, a.name,
         p.vllm AS vllm_pattern,
         CASE WHEN regexp_matches(a.name, p.vllm) THEN 'vllm'
              WHEN regexp_matches(a.name, '^step\[(EXTEND|DECODE|MIXED) [^\]]*sqsq=[0-9]+')
              THEN 'sglang'
              WHEN regexp_matches(a.name, '^prefill\[.*sqsq=[0-9]+') THEN 'prefill'
              WHEN regexp_matches(a.name, '^decode\[.*sqsq=[0-9]+') THEN 'decode'
         END AS format
  FROM cpu_ops AS a
  CROSS JOIN pattern AS p
  WHERE a.category = 'user_annotation'
    AND (a.name LIKE 'execute\_%' ESCAPE '\' OR a.name LIKE 'step[%'
         OR a.name LIKE 'prefill[%' OR a.name LIKE 'decode[%')
),
fields AS (
  -- each sum as the annotation's text: vLLM's by position, SGLang's by key (a key it does
  -- not write is 0), ATOM's tok, sk, sqsq and sqsk for the context (prefill) or the
  -- generation (decode) terms, the others 0
  SELECT *,
         CASE format WHEN 'vllm' THEN regexp_extract(name, vllm_pattern, 1)
                     WHEN 'sglang' THEN regexp_extract(name, '[\[ ]c_sq=([0-9]+)', 1)
                     WHEN 'prefill' THEN regexp_extract(name, ' tok=([0-9]+)', 1) END AS c_sq_text,
         CASE format WHEN 'vllm' THEN regexp_extract(name, vllm_pattern, 2)
                     WHEN 'sglang' THEN regexp_extract(name, '[\[ ]c_sk=([0-9]+)', 1)
                     WHEN 'prefill' THEN regexp_extract(name, ' sk=([0-9]+)', 1) END AS c_sk_text,
         CASE format WHEN 'vllm' THEN regexp_extract(name, vllm_pattern, 3)
                     WHEN 'sglang' THEN regexp_extract(name, '[\[ ]c_sqsq=([0-9]+)', 1)
                     WHEN 'prefill' THEN regexp_extract(name, ' sqsq=([0-9]+)', 1)
         END AS c_sqsq_text,
         CASE format WHEN 'vllm' THEN regexp_extract(name, vllm_pattern, 4)
                     WHEN 'sglang' THEN regexp_extract(name, '[\[ ]c_sqsk=([0-9]+)', 1)
                     WHEN 'prefill' THEN regexp_extract(name, ' sqsk=([0-9]+)', 1)
         END AS c_sqsk_text,
         CASE format WHEN 'vllm' THEN regexp_extract(name, vllm_pattern, 5)
                     WHEN 'sglang' THEN regexp_extract(name, '[\[ ]g_sq=([0-9]+)', 1)
                     WHEN 'decode' THEN regexp_extract(name, ' tok=([0-9]+)', 1) END AS g_sq_text,
         CASE format WHEN 'vllm' THEN regexp_extract(name, vllm_pattern, 6)
                     WHEN 'sglang' THEN regexp_extract(name, '[\[ ]g_sk=([0-9]+)', 1)
                     WHEN 'decode' THEN regexp_extract(name, ' sk=([0-9]+)', 1) END AS g_sk_text,
         CASE format WHEN 'vllm' THEN regexp_extract(name, vllm_pattern, 8)
                     WHEN 'sglang' THEN regexp_extract(name, '[\[ ]g_sqsk=([0-9]+)', 1)
                     WHEN 'decode' THEN regexp_extract(name, ' sqsk=([0-9]+)', 1)
         END AS g_sqsk_text
  FROM annotations
  WHERE format IS NOT NULL
),
iterations AS (
  SELECT run, phase, rank, trace_id, pid, tid, ts_ns, dur_ns,
         CAST(TRY_CAST(coalesce(nullif(c_sq_text, ''), '0') AS BIGINT) AS DOUBLE) AS c_sq,
         CAST(TRY_CAST(coalesce(nullif(c_sk_text, ''), '0') AS BIGINT) AS DOUBLE) AS c_sk,
         CAST(TRY_CAST(coalesce(nullif(c_sqsq_text, ''), '0') AS BIGINT) AS DOUBLE) AS c_sqsq,
         CAST(TRY_CAST(coalesce(nullif(c_sqsk_text, ''), '0') AS BIGINT) AS DOUBLE) AS c_sqsk,
         CAST(TRY_CAST(coalesce(nullif(g_sq_text, ''), '0') AS BIGINT) AS DOUBLE) AS g_sq,
         CAST(TRY_CAST(coalesce(nullif(g_sk_text, ''), '0') AS BIGINT) AS DOUBLE) AS g_sk,
         CAST(TRY_CAST(coalesce(nullif(g_sqsk_text, ''), '0') AS BIGINT) AS DOUBLE) AS g_sqsk
  FROM fields
),
captured AS (
  -- the captured launches whose kernels a graph launch replayed: their thread and start in
  -- the capture, and the graph launch (its thread and start in the replay)
  SELECT g.run, g.capture_phase, g.rank, g.capture_trace_id, cl.pid AS capture_pid,
         cl.tid AS capture_tid, cl.ts_ns AS capture_ts_ns, g.phase, g.trace_id,
         g.launch_event_index, l.pid, l.tid, l.ts_ns
  FROM (SELECT DISTINCT run, phase, rank, trace_id, launch_event_index, capture_phase,
               capture_trace_id, captured_launch_event_index
        FROM graph_replay_kernels
        WHERE captured_launch_event_index IS NOT NULL) AS g
  JOIN runtime AS cl
    ON cl.run = g.run AND cl.phase = g.capture_phase AND cl.rank = g.rank
   AND cl.trace_id = g.capture_trace_id AND cl.event_index = g.captured_launch_event_index
  JOIN runtime AS l
    ON l.run = g.run AND l.phase = g.phase AND l.rank = g.rank AND l.trace_id = g.trace_id
   AND l.event_index = g.launch_event_index
),
replayed AS (
  -- each call that put kernels into a captured graph (a captured launch on its thread
  -- within it), with each graph launch that replayed them
  SELECT DISTINCT c.run, c.phase, c.rank, c.trace_id, c.event_index, g.phase AS launch_phase,
         g.trace_id AS launch_trace_id, g.launch_event_index, g.pid, g.tid, g.ts_ns
  FROM calls AS c
  JOIN captured AS g
    ON g.run = c.run AND g.capture_phase = c.phase AND g.rank = c.rank
   AND g.capture_trace_id = c.trace_id AND g.capture_pid = c.pid AND g.capture_tid = c.tid
   AND g.capture_ts_ns >= c.ts_ns AND g.capture_ts_ns < c.ts_ns + c.dur_ns
),
placed AS (
  -- where each call ran: itself, or (a replayed call) each graph launch that replayed it
  SELECT c.*, c.phase AS at_phase, c.trace_id AS at_trace_id, c.pid AS at_pid,
         c.tid AS at_tid, c.ts_ns AS at_ts_ns, CAST(NULL AS VARCHAR) AS launch_phase,
         CAST(NULL AS VARCHAR) AS launch_trace_id, CAST(NULL AS BIGINT) AS launch_event_index
  FROM calls AS c
  WHERE NOT EXISTS (SELECT 1 FROM replayed AS r
                    WHERE r.run = c.run AND r.phase = c.phase AND r.rank = c.rank
                      AND r.trace_id = c.trace_id AND r.event_index = c.event_index)
  UNION ALL
  SELECT c.*, r.launch_phase, r.launch_trace_id, r.pid, r.tid, r.ts_ns, r.launch_phase,
         r.launch_trace_id, r.launch_event_index
  FROM calls AS c
  JOIN replayed AS r
    ON r.run = c.run AND r.phase = c.phase AND r.rank = c.rank
   AND r.trace_id = c.trace_id AND r.event_index = c.event_index
),
annotated AS (
  -- the innermost enclosing iteration annotation (the latest started)
  SELECT p.*, i.c_sq, i.c_sk, i.c_sqsq, i.c_sqsk, i.g_sq, i.g_sk, i.g_sqsk,
         row_number() OVER (PARTITION BY p.run, p.phase, p.rank, p.trace_id, p.event_index,
                                         p.launch_trace_id, p.launch_event_index
                            ORDER BY i.ts_ns DESC) AS choice
  FROM placed AS p
  JOIN iterations AS i
    ON i.run = p.run AND i.phase = p.at_phase AND i.rank = p.rank
   AND i.trace_id = p.at_trace_id AND i.pid = p.at_pid AND i.tid = p.at_tid
   AND i.ts_ns <= p.at_ts_ns AND p.at_ts_ns < i.ts_ns + i.dur_ns
),
ranked AS (
  SELECT *,
         json_array_length(json_extract_string(dims, q_p)) AS q_rank,
         json_array_length(json_extract_string(dims, k_p)) AS k_rank,
         json_array_length(json_extract_string(dims, v_p)) AS v_rank
  FROM annotated
  WHERE choice = 1
),
shaped AS (
  SELECT *,
         CAST(TRY_CAST(json_extract_string(dims, q_p || '[1]') AS BIGINT) AS DOUBLE) AS hq,
         CAST(TRY_CAST(json_extract_string(dims, q_p || '[2]') AS BIGINT) AS DOUBLE) AS d_qk,
         CAST(TRY_CAST(json_extract_string(dims, k_p || '['
                       || CAST(CASE WHEN hkv_dim < 0 THEN k_rank + hkv_dim ELSE hkv_dim END
                               AS VARCHAR) || ']') AS BIGINT) AS DOUBLE) AS hkv,
         CAST(TRY_CAST(json_extract_string(dims, v_p || '[' || CAST(v_rank - 1 AS VARCHAR)
                                                 || ']') AS BIGINT) AS DOUBLE) AS v_last
  FROM ranked
  WHERE q_rank = 3 AND k_rank >= 3 AND (v_p IS NULL OR v_rank >= 3)
),
sums AS (
  -- a decode-only kernel's context terms are 0; a sliding window caps each generation
  -- request's keys at W
  SELECT *, coalesce(v_last, d_qk) AS d_v,
         CASE WHEN decode_only THEN 0 ELSE c_sq END AS cq,
         CASE WHEN decode_only THEN 0 ELSE c_sk END AS ck,
         CASE WHEN decode_only THEN 0 ELSE c_sqsq END AS cqq,
         CASE WHEN decode_only THEN 0 ELSE c_sqsk END AS cqk,
         CASE WHEN window_size > 0 AND g_sq > 0 THEN least(g_sk, g_sq * window_size)
              ELSE g_sk END AS gk,
         CASE WHEN window_size > 0 AND g_sq > 0 THEN least(g_sqsk, g_sq * window_size)
              ELSE g_sqsk END AS gqk
  FROM shaped
)
SELECT s.run, s.phase, s.rank, s.trace_id, s.event_index, s.launch_phase, s.launch_trace_id,
       s.launch_event_index, s.name, 'attention' AS family, 'forward' AS pass,
       s.dims AS shapes, s.a_type, tq.dtype,
       s.hq * (s.d_qk + s.d_v) * (2 * s.cqk - s.cqq + 2 * s.gqk) AS flops,
       (s.cq + s.g_sq) * (s.hq + s.hkv) * (s.d_qk + s.d_v) * tq.element_bytes
       + ((s.ck - s.cq) + (s.gk - s.g_sq)) * s.hkv * (s.d_qk + s.d_v) * tk.element_bytes
         AS bytes
FROM sums AS s
LEFT JOIN _dtypes AS tq ON tq.input_type = s.a_type
LEFT JOIN _dtypes AS tk ON tk.input_type = s.kv_type;
