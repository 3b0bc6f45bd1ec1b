-- Idempotency keys (protocol.md section 6): per owner (a team's credential, or the admin token)
-- and key, the fingerprint of the request that claimed it, when, and its kept answer (status,
-- content type, the headers it repeats as a JSON array of [name, value], and body; NULL while the
-- request runs). Every instance on the database shares
-- them; a purge deletes those claimed more than 24 hours ago, by claim time.

CREATE TABLE idempotency_keys (
    owner text NOT NULL,
    key text NOT NULL,
    fingerprint bytea NOT NULL,
    created_at bigint NOT NULL,
    status integer,
    content_type text,
    headers jsonb,
    body bytea,
    PRIMARY KEY (owner, key)
);
CREATE INDEX idempotency_keys_by_time ON idempotency_keys (created_at);
