-- GPU activity with its class, collective and short name, from the ordered rules.
--
-- The rules are data (table `kernel_class_rules`, loaded from sql/kernel_rules.toml and the
-- user's rule files): the first rule whose category and regular expression (on the lower-cased
-- name) match gives the class; for communication, the first matching collective rule gives the
-- collective. Rules and short names are worked out once per distinct (category, name), read
-- from the small `kernel_names` table, then joined back on the compact name_id.
--
-- Columns: every column of `kernels`, plus
--   class        communication, computation, memory, sync or other
--   collective   all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, broadcast,
--                dispatch, combine or other; NULL unless class is communication
--   short_name   the name without template arguments and parameters (kernels only;
--                other categories keep their name), for grouping across builds
CREATE OR REPLACE VIEW kernel_classes AS
WITH names AS (
  SELECT DISTINCT category, coalesce(name_id, 0) AS name_key, name FROM kernel_names
),
matches AS (
  SELECT n.category, n.name_key, n.name, r.target, r.value, r.priority
  FROM names AS n
  JOIN kernel_class_rules AS r
    ON (r.category IS NULL OR r.category = n.category)
   AND (r.pattern IS NULL OR regexp_matches(lower(coalesce(n.name, '')), r.pattern))
),
classes AS (
  SELECT category, name_key, name,
         min_by(value, priority) AS class
  FROM matches
  WHERE target = 'class'
  GROUP BY category, name_key, name
),
collectives AS (
  SELECT category, name_key, min_by(value, priority) AS collective
  FROM matches
  WHERE target = 'collective'
  GROUP BY category, name_key
),
classified AS (
  SELECT c.category, c.name_key, c.class,
         CASE WHEN c.class = 'communication' THEN coalesce(x.collective, 'other') END
           AS collective,
         CASE
           WHEN c.category = 'kernel' THEN trim(split_part(split_part(
             replace(replace(c.name, '(anonymous namespace)::', ''), 'void ', ''), '<', 1),
             '(', 1))
           ELSE c.name
         END AS short_name
  FROM classes AS c
  LEFT JOIN collectives AS x ON x.category = c.category AND x.name_key = c.name_key
)
SELECT k.*, coalesce(c.class, 'other') AS class, c.collective, c.short_name
FROM kernels AS k
LEFT JOIN classified AS c
  ON c.category = k.category AND c.name_key = coalesce(k.name_id, 0);
