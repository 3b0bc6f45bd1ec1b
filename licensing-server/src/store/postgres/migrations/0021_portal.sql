-- The customer portal: one-time sign-in tickets (an e-mailed link with its code, or a link a
-- vendor's site minted), found by the hash of the link's token or by team and public id;
-- signed-in sessions by the hash of their cookie; and each license's self-service resets of the
-- current period, written in the transaction of the forget they paid for, under the license's
-- row lock.

CREATE TABLE portal_tickets (
    token_sha256 text PRIMARY KEY,
    id uuid NOT NULL,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    expires_at bigint NOT NULL,
    doc jsonb NOT NULL
);
CREATE UNIQUE INDEX portal_tickets_by_id ON portal_tickets (team_id, id);
CREATE INDEX portal_tickets_by_expiry ON portal_tickets (expires_at);

CREATE TABLE portal_sessions (
    id_sha256 text PRIMARY KEY,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    created_at bigint NOT NULL,
    last_seen_at bigint NOT NULL,
    doc jsonb NOT NULL
);
CREATE INDEX portal_sessions_by_team ON portal_sessions (team_id, created_at);

CREATE TABLE self_service_resets (
    license_id uuid NOT NULL REFERENCES licenses (id) ON DELETE CASCADE,
    at bigint NOT NULL
);
CREATE INDEX self_service_resets_by_license ON self_service_resets (license_id, at);
