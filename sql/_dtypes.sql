-- The data types PyTorch's profiler writes in a cpu_op's `Input type`: bytes per element and
-- the class of device peak (device_peaks.dtype) that arithmetic on it runs at.
-- A type not listed here (`Scalar`, `TensorList`, an empty string for None) has no size: a
-- model that needs it leaves `bytes` NULL. Integer types other than 8-bit have no peak class.
-- The float8 types (e4m3, e5m2, their fnuz forms on AMD) are 1 byte and class fp8.
--
-- Reads:
--
-- Columns:
--   input_type     the profiler's name of the type (c10::BFloat16, float, ...)
--   element_bytes  bytes per element
--   dtype          peak class: fp64, fp32, bf16, fp16, fp8, int8, or NULL
CREATE OR REPLACE VIEW _dtypes AS
SELECT input_type, element_bytes, dtype
FROM (VALUES
  ('double', 8, 'fp64'),
  ('float', 4, 'fp32'),
  ('c10::BFloat16', 2, 'bf16'),
  ('c10::Half', 2, 'fp16'),
  ('c10::Float8_e4m3fn', 1, 'fp8'),
  ('c10::Float8_e5m2', 1, 'fp8'),
  ('c10::Float8_e4m3fnuz', 1, 'fp8'),
  ('c10::Float8_e5m2fnuz', 1, 'fp8'),
  ('signed char', 1, 'int8'),
  ('unsigned char', 1, 'int8'),
  ('bool', 1, CAST(NULL AS VARCHAR)),
  ('short int', 2, CAST(NULL AS VARCHAR)),
  ('int', 4, CAST(NULL AS VARCHAR)),
  ('long int', 8, CAST(NULL AS VARCHAR)),
  ('c10::complex<float>', 8, CAST(NULL AS VARCHAR)),
  ('c10::complex<double>', 16, CAST(NULL AS VARCHAR))
) AS types (input_type, element_bytes, dtype);
