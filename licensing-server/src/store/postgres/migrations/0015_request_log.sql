-- Request history (protocol.md section 6): every client request that reached a license, accepted
-- or refused, written behind in batches (identical requests of one batch as one row with a
-- count and the last one's time). `seq` orders entries of one millisecond; no foreign
-- keys, so that a batch never fails on a license deleted meanwhile (its entries age out).

CREATE TABLE request_log (
    seq bigserial PRIMARY KEY,
    team_id uuid NOT NULL,
    license_id uuid NOT NULL,
    at bigint NOT NULL,
    count integer NOT NULL DEFAULT 1,
    last_at bigint,
    endpoint text NOT NULL,
    code text NOT NULL,
    ip_address text NOT NULL,
    country text,
    hardware_identifier text,
    product_id uuid,
    version text
);
CREATE INDEX request_log_by_license ON request_log (team_id, license_id, at, seq);
CREATE INDEX request_log_by_team ON request_log (team_id, at, seq);
CREATE INDEX request_log_by_time ON request_log (at);
