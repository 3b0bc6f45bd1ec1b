-- Idempotency keys: a write made under a key marks its row applied in the write's own
-- transaction, so that a crash before its answer is kept never lets the request run twice. A
-- running request holds a session advisory lock on its key instead of a row (a lock whose
-- server stopped is gone with its connection), so rows are written only by the write and by
-- the answer; rows of running claims left by earlier servers (status NULL, not applied) are
-- free.
ALTER TABLE idempotency_keys ADD COLUMN applied boolean NOT NULL DEFAULT false;
