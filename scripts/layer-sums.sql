-- Per-layer sums against the iteration, over the runs with per-layer timings (docs/MEASUREMENT.md):
-- runs; mean, min, max of (sum of layers alone) / iteration and the mean |difference| / iteration; the same inside iterations.
--   sqlite3 -header data/dnncast-cpu2.db < scripts/layer-sums.sql
WITH s AS (
  SELECT r.id, r.time_ms_median AS t,
         SUM(l.forward_ms + l.backward_ms) AS alone,
         SUM(l.iteration_forward_ms + l.iteration_backward_ms) AS inside
  FROM runs r JOIN layer_times l ON l.run_id = r.id GROUP BY r.id)
SELECT COUNT(*),
       ROUND(AVG(alone / t), 3), ROUND(MIN(alone / t), 3), ROUND(MAX(alone / t), 3),
       ROUND(AVG(ABS(alone - t) / t), 3),
       ROUND(AVG(inside / t), 3), ROUND(MIN(inside / t), 3), ROUND(MAX(inside / t), 3),
       ROUND(AVG(ABS(inside - t) / t), 3)
FROM s;
