-- Idempotency keys: a claim's row is inserted small and updated once with its answer (a few
-- hundred bytes to a few KiB). Filling pages to a tenth leaves room on the claim's page for
-- that update, so that it is a heap-only update (no new entries in the two indexes). The price:
-- about three answered rows a page (2.7 KB of table per answer kept instead of about 1 KB), for
-- the day keys are kept.
ALTER TABLE idempotency_keys SET (fillfactor = 10);
