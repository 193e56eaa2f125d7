-- GPU activity with its class, collective and short name: `kernels` joined on name_id to
-- the per-name classification of `kernel_name_classes` (rules as data).
--
-- Columns: every column of `kernels`, plus
--   class        communication, computation, memory, sync or other
--   collective   all_reduce, all_gather, reduce_scatter, all_to_all, send_recv, broadcast,
--                dispatch, combine or other; NULL unless class is communication
--   short_name   the name without parameters and template arguments but the first
--                template argument's name (kernels only; other categories keep their name),
--                for grouping across builds: see `kernel_name_classes`
CREATE OR REPLACE VIEW kernel_classes AS
SELECT k.*, coalesce(c.class, 'other') AS class, c.collective, c.short_name
FROM kernels AS k
LEFT JOIN kernel_name_classes AS c
  ON c.run = k.run AND c.category = k.category AND c.name_key = coalesce(k.name_id, 0);
