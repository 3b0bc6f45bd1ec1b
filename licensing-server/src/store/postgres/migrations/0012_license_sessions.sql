-- Floating sessions: the running copies of an application a license admits at once. A session
-- counts while expires_at is ahead; the atomic step of a license counts them (by license and
-- expiry) with the license row locked, and the sweep finds expired ones by expiry across teams.

CREATE TABLE license_sessions (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    license_id uuid NOT NULL REFERENCES licenses (id) ON DELETE CASCADE,
    expires_at bigint NOT NULL,
    started_at bigint NOT NULL,
    doc jsonb NOT NULL
);
CREATE INDEX license_sessions_by_license ON license_sessions (license_id, expires_at);
CREATE INDEX license_sessions_by_expiry ON license_sessions (expires_at);
