-- GPU activity with its class, collective and short name, from the ordered rules.
--
-- The rules are data (table `kernel_class_rules`, loaded from sql/kernel_rules.toml and the
-- user's rule files): the first rule whose category and regular expression (on the lower-cased
-- name) match gives the class; for communication, the first matching collective rule gives the
-- collective. Rules are applied to distinct (category, name) pairs, then joined back.
--
-- Columns: every column of `kernels`, plus
--   class        communication, computation, memory, sync or other
--   collective   all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, broadcast,
--                dispatch, combine or other; NULL unless class is communication
--   short_name   the name without template arguments and parameters (kernels only;
--                other categories keep their name), for grouping across builds
CREATE OR REPLACE VIEW kernel_classes AS
WITH names AS (
  SELECT DISTINCT category, name FROM kernels
),
class_matches AS (
  SELECT n.category, n.name, r.value, r.priority
  FROM names AS n
  JOIN kernel_class_rules AS r
    ON r.target = 'class'
   AND (r.category IS NULL OR r.category = n.category)
   AND (r.pattern IS NULL OR regexp_matches(lower(coalesce(n.name, '')), r.pattern))
),
classes AS (
  SELECT category, name, min_by(value, priority) AS class
  FROM class_matches
  GROUP BY category, name
),
collective_matches AS (
  SELECT c.category, c.name, r.value, r.priority
  FROM classes AS c
  JOIN kernel_class_rules AS r
    ON r.target = 'collective'
   AND (r.category IS NULL OR r.category = c.category)
   AND (r.pattern IS NULL OR regexp_matches(lower(coalesce(c.name, '')), r.pattern))
  WHERE c.class = 'communication'
),
collectives AS (
  SELECT category, name, min_by(value, priority) AS collective
  FROM collective_matches
  GROUP BY category, name
)
SELECT
  k.*,
  coalesce(c.class, 'other') AS class,
  CASE WHEN c.class = 'communication' THEN coalesce(x.collective, 'other') END AS collective,
  CASE
    WHEN k.category = 'kernel' THEN trim(split_part(split_part(
      replace(replace(k.name, '(anonymous namespace)::', ''), 'void ', ''), '<', 1), '(', 1))
    ELSE k.name
  END AS short_name
FROM kernels AS k
LEFT JOIN classes AS c
  ON c.category IS NOT DISTINCT FROM k.category AND c.name IS NOT DISTINCT FROM k.name
LEFT JOIN collectives AS x
  ON x.category IS NOT DISTINCT FROM k.category AND x.name IS NOT DISTINCT FROM k.name;
