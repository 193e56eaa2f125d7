-- Class, collective and short name of each distinct GPU activity name, from the ordered rules.
--
-- The rules are data (table `kernel_class_rules`, loaded from sql/kernel_rules.toml and the
-- user's rule files): the first rule whose category and regular expression (on the lower-cased
-- name) match gives the class; for communication, the first matching collective rule gives the
-- collective. Worked out once per run and distinct (category, name) of the small
-- `kernel_names` table, so that a query about one run reads that run's names only;
-- `kernel_classes` and `kernel_stats` join it on run and the compact name_id.
--
-- Reads: kernel_class_rules, kernel_names
--
-- Columns:
--   run          the run whose traces have the name
--   category     category of the activity
--   name_key     name_id of the name (0 for a missing name): the join key
--   name         the full name
--   class        communication, computation, memory, sync or other
--   collective   all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, broadcast,
--                dispatch, combine or other; NULL unless class is communication
--   short_name   for kernels, the name without parameters and template arguments but the
--                first template argument that is a name, itself without its arguments:
--                `cutlass::device_kernel<flash::FlashAttnBwd>`, `at::native::
--                vectorized_elementwise_kernel<at::native::CUDAFunctor_add>`; other
--                categories keep their name. Worked out from the name alone, so a kernel has
--                the same short name in every run (what `diff --by short_name` matches
--                across builds whose tile sizes or dtypes differ), while kernels that only
--                share a wrapper template (the four `cutlass::device_kernel` of DeepSeek's
--                GEMMs and FlashAttention) stay apart
CREATE OR REPLACE VIEW kernel_name_classes AS
WITH names AS NOT MATERIALIZED (
  SELECT DISTINCT run, category, coalesce(name_id, 0) AS name_key, name FROM kernel_names
),
matches AS NOT MATERIALIZED (
  SELECT n.run, n.category, n.name_key, r.target, r.value, r.priority
  FROM names AS n
  JOIN kernel_class_rules AS r
    ON (r.category IS NULL OR r.category = n.category)
   AND (r.pattern IS NULL OR regexp_matches(lower(coalesce(n.name, '')), r.pattern))
),
classes AS (
  SELECT run, category, name_key, min_by(value, priority) AS class
  FROM matches
  WHERE target = 'class'
  GROUP BY run, category, name_key
),
collectives AS (
  SELECT run, category, name_key, min_by(value, priority) AS collective
  FROM matches
  WHERE target = 'collective'
  GROUP BY run, category, name_key
),
cleaned AS (
  SELECT *, replace(replace(name, '(anonymous namespace)::', ''), 'void ', '') AS plain
  FROM names
),
plain_names AS (
  SELECT run, category, name_key, name,
         trim(split_part(split_part(plain, '<', 1), '(', 1)) AS base_name,
         -- the first template argument that is a name (numbers and true/false skipped), up
         -- to its own template arguments or parameters
         regexp_extract(plain, '^[^<(]*<(?: *(?:[-+]?[0-9][A-Za-z0-9_.]*|true|false) *,)*'
                        || ' *([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)', 1)
           AS template_argument
  FROM cleaned
)
SELECT n.run, n.category, n.name_key, n.name,
       coalesce(c.class, 'other') AS class,
       CASE WHEN c.class = 'communication' THEN coalesce(x.collective, 'other') END
         AS collective,
       CASE
         WHEN n.category <> 'kernel' THEN n.name
         WHEN n.template_argument <> '' THEN n.base_name || '<' || n.template_argument || '>'
         ELSE n.base_name
       END AS short_name
FROM plain_names AS n
LEFT JOIN classes AS c
  ON c.run = n.run AND c.category = n.category AND c.name_key = n.name_key
LEFT JOIN collectives AS x
  ON x.run = n.run AND x.category = n.category AND x.name_key = n.name_key;
