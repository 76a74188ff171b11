-- profd store, version 14: each drain's sampling rate (issue 44). A
-- capture raises the on-CPU sampler's rate for a while (capture_frequency),
-- and a reload may change `frequency`; profd flips a drain at every such
-- change, so each drain was sampled at one rate, stored here. Queries,
-- series and the export weight a drain's cpu samples by the answer's base
-- rate over this one (daemon/store/rate-weight.h), so a window that spans
-- a raise keeps its shares. NULL: a drain written before version 14, or a
-- merged bucket of drains of different rates (never written: retention
-- merges only drains of one rate), read as the answer's base rate.
ALTER TABLE drains ADD COLUMN frequency_hz INTEGER;
-- The rate a capture raised the sampler to for its duration (the
-- sampler's rate then, as capture_raise_plan bounds capture_frequency);
-- NULL for captures recorded before version 14 and where no on-CPU
-- sampler runs.
ALTER TABLE captures ADD COLUMN frequency_hz INTEGER;
