-- FLOPs and bytes moved of each call of a mixture-of-experts layer op whose own shapes are
-- the tokens and the router's logits only (vLLM's vllm::moe_forward): the experts' weights
-- and the experts per token are read from the ops the call runs on its thread, as the trace
-- records them, rather than guessed.
--   M tokens, K hidden size   x [M, K] (x_at; the hidden size as the kernels run it, padded)
--   E experts                 the logits' dimension 1 (logits_at)
--   t experts per token       Concrete Input 1 of the first top-k op inside (TopK, aten::topk)
--   w1, w2                    the first and the last op inside whose first operand is 3-D
--                             with E rows (the experts' up/gate and down weights, as the
--                             kernels view them), in start order
--   packing p                 K / w1's dimension 1 (K-major weights [E, K/p, g N] and
--                             [E, N/p, K], Triton's matmul_ogs) or K / w1's dimension 2
--                             (N-major [E, g N, K/p] and [E, K, N/p], vLLM's fused_moe): 1, or
--                             2 for 4-bit values two to a byte (MXFP4)
--   N intermediate size       from w2 (N/p times p); gated (SwiGLU, g = 2) when w1 holds 2 N
-- A call without a top-k op, or without two such weights that agree, is absent.
-- Formulas: TraceLens's unfused MoE stages (up and gate, down) and the weighted sum of the t
-- outputs of each token, with E_active = E (1 - ((E - t) / E)^M) the experts a batch reaches
-- under uniform routing:
--   flops = 2 M K N t (g + 1) + M K (2 t - 1)
--   bytes = x + (w1 + w2 as stored) x E_active / E + 2 M t N (the up stage's output, written
--           and read) + 2 M t K (the down stage's per-expert output, written and read by the
--           weighted sum) + M K (the output), the activations in x's type
--
-- Reads: cpu_ops, _dtypes
--
-- Columns:
--   run, phase, rank   partition
--   trace_id           the trace of the call
--   event_index        the call's cpu_op event
--   name               the op (vllm::moe_forward)
--   family             moe
--   pass               forward
--   shapes             the call's Input Dims, JSON text
--   a_type             the profiler's type of x
--   dtype              its peak class (see _dtypes), NULL when unknown
--   flops              floating-point operations of the call (DOUBLE)
--   bytes              bytes read and written (DOUBLE), NULL when a type is unknown
CREATE OR REPLACE VIEW _op_moe_layer_models AS
WITH specs AS (
  SELECT *
  FROM (VALUES
    ('vllm::moe_forward', 0, 1)
  ) AS s (name, x_at, logits_at)
),
calls AS (
  SELECT o.run, o.phase, o.rank, o.trace_id, o.event_index, o.name, o.pid, o.tid, o.ts_ns,
         o.dur_ns, CAST(json_extract(o.args, '$."Input Dims"') AS VARCHAR) AS dims,
         json_extract_string(o.args, '$."Input type"[' || CAST(s.x_at AS VARCHAR) || ']')
           AS a_type,
         CAST(TRY_CAST(json_extract_string(o.args, '$."Input Dims"['
                       || CAST(s.x_at AS VARCHAR) || '][0]') AS BIGINT) AS DOUBLE) AS m,
         CAST(TRY_CAST(json_extract_string(o.args, '$."Input Dims"['
                       || CAST(s.x_at AS VARCHAR) || '][1]') AS BIGINT) AS DOUBLE) AS k,
         CAST(TRY_CAST(json_extract_string(o.args, '$."Input Dims"['
                       || CAST(s.logits_at AS VARCHAR) || '][1]') AS BIGINT) AS DOUBLE)
           AS experts
  FROM specs AS s
  JOIN cpu_ops AS o ON o.name = s.name AND o.args LIKE '%"Input Dims"%'
),
threads AS (
  SELECT DISTINCT run, phase, rank, trace_id, pid, tid FROM calls
),
marks AS (
  -- the calls and the ops with shapes on their threads, in start order, each op with the
  -- start of the latest call started before it (calls of the layer op do not nest): found
  -- by a scan of the thread, not by pairing every call with every op
  SELECT *,
         max(CASE WHEN is_call THEN ts_ns END) OVER (
           PARTITION BY run, phase, rank, trace_id, pid, tid
           ORDER BY ts_ns, CASE WHEN is_call THEN 0 ELSE 1 END, event_index
           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS call_ts
  FROM (
    SELECT run, phase, rank, trace_id, pid, tid, ts_ns, event_index, name,
           CAST(NULL AS VARCHAR) AS args, true AS is_call
    FROM calls
    UNION ALL
    SELECT o.run, o.phase, o.rank, o.trace_id, o.pid, o.tid, o.ts_ns, o.event_index, o.name,
           o.args, false AS is_call
    FROM cpu_ops AS o
    JOIN threads AS t
      ON t.run = o.run AND t.phase = o.phase AND t.rank = o.rank AND t.trace_id = o.trace_id
     AND t.pid = o.pid AND t.tid = o.tid
    WHERE o.category = 'cpu_op' AND o.args LIKE '%"Input Dims"%'
  ) AS both_kinds
),
inner_ops AS (
  -- the ops with shapes the call runs on its thread
  SELECT c.run, c.phase, c.rank, c.trace_id, c.event_index, c.experts, m.name, m.ts_ns,
         m.event_index AS inner_index, m.args
  FROM marks AS m
  JOIN calls AS c
    ON c.run = m.run AND c.phase = m.phase AND c.rank = m.rank AND c.trace_id = m.trace_id
   AND c.pid = m.pid AND c.tid = m.tid AND c.ts_ns = m.call_ts
  WHERE NOT m.is_call AND m.ts_ns < c.ts_ns + c.dur_ns AND m.event_index <> c.event_index
),
topk AS (
  SELECT run, phase, rank, trace_id, event_index,
         CAST(TRY_CAST(json_extract_string(args, '$."Concrete Inputs"[1]') AS BIGINT) AS DOUBLE)
           AS t,
         row_number() OVER (PARTITION BY run, phase, rank, trace_id, event_index
                            ORDER BY ts_ns, inner_index) AS nth
  FROM inner_ops
  WHERE name IN ('TopK', 'aten::topk')
),
weights AS (
  -- 3-D first operands with E rows: the experts' weights, first (up) and last (down)
  SELECT *,
         row_number() OVER (PARTITION BY run, phase, rank, trace_id, event_index
                            ORDER BY ts_ns, inner_index) AS first_nth,
         row_number() OVER (PARTITION BY run, phase, rank, trace_id, event_index
                            ORDER BY ts_ns DESC, inner_index DESC) AS last_nth
  FROM (
    SELECT run, phase, rank, trace_id, event_index, ts_ns, inner_index,
           json_extract_string(args, '$."Input type"[0]') AS w_type,
           CAST(TRY_CAST(json_extract_string(args, '$."Input Dims"[0][0]') AS BIGINT) AS DOUBLE)
             AS w0,
           CAST(TRY_CAST(json_extract_string(args, '$."Input Dims"[0][1]') AS BIGINT) AS DOUBLE)
             AS w1,
           CAST(TRY_CAST(json_extract_string(args, '$."Input Dims"[0][2]') AS BIGINT) AS DOUBLE)
             AS w2,
           experts
    FROM inner_ops
    WHERE json_array_length(json_extract_string(args, '$."Input Dims"[0]')) = 3
  ) AS shaped
  WHERE w0 = experts
),
paired AS (
  SELECT c.*, tk.t, u.w1 AS u1, u.w2 AS u2, u.w_type AS u_type, d.w1 AS d1, d.w2 AS d2,
         d.w_type AS d_type
  FROM calls AS c
  JOIN topk AS tk
    ON tk.run = c.run AND tk.phase = c.phase AND tk.rank = c.rank
   AND tk.trace_id = c.trace_id AND tk.event_index = c.event_index AND tk.nth = 1
  JOIN weights AS u
    ON u.run = c.run AND u.phase = c.phase AND u.rank = c.rank AND u.trace_id = c.trace_id
   AND u.event_index = c.event_index AND u.first_nth = 1
  JOIN weights AS d
    ON d.run = c.run AND d.phase = c.phase AND d.rank = c.rank AND d.trace_id = c.trace_id
   AND d.event_index = c.event_index AND d.last_nth = 1 AND d.inner_index <> u.inner_index
),
laid_out AS (
  -- K-major (the down weight's last dimension is K) or N-major (its dimension 1 is K)
  SELECT *,
         CASE WHEN d2 = k THEN k / u1 WHEN d1 = k THEN k / u2 END AS p,
         CASE WHEN d2 = k THEN u2 WHEN d1 = k THEN u1 END AS up_rows
  FROM paired
),
sized AS (
  SELECT *, CASE WHEN d2 = k THEN d1 ELSE d2 END * p AS n
  FROM laid_out
  WHERE p IN (1, 2) AND t > 0 AND experts >= t
),
gated AS (
  SELECT *, CASE WHEN up_rows = 2 * n THEN 2 ELSE 1 END AS g,
         1 - power((experts - t) / experts, m) AS active
  FROM sized
  WHERE up_rows IN (n, 2 * n)
)
SELECT g.run, g.phase, g.rank, g.trace_id, g.event_index, g.name, 'moe' AS family,
       'forward' AS pass, g.dims AS shapes, g.a_type, tx.dtype,
       2 * g.m * g.k * g.n * g.t * (g.g + 1) + g.m * g.k * (2 * g.t - 1) AS flops,
       (2 * g.m * g.k + 2 * g.m * g.t * g.n + 2 * g.m * g.t * g.k) * tx.element_bytes
       + g.active * g.experts * (g.u1 * g.u2 * tu.element_bytes + g.d1 * g.d2 * td.element_bytes)
         AS bytes
FROM gated AS g
LEFT JOIN _dtypes AS tx ON tx.input_type = g.a_type
LEFT JOIN _dtypes AS tu ON tu.input_type = g.u_type
LEFT JOIN _dtypes AS td ON td.input_type = g.d_type;
