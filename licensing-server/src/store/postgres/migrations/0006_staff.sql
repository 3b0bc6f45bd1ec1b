-- Staff accounts (the dashboard's users) and their signed-in sessions, shared by every instance.

CREATE TABLE staff_users (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    -- The login name, lower-cased: one account per address on the whole server.
    email text NOT NULL CONSTRAINT staff_users_email_unique UNIQUE,
    created_at bigint NOT NULL,
    doc jsonb NOT NULL
);
CREATE INDEX staff_users_by_team ON staff_users (team_id, created_at, id);

CREATE TABLE staff_sessions (
    -- SHA-256 of the session cookie, in hex.
    id_sha256 text PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES staff_users (id) ON DELETE CASCADE,
    last_seen_at bigint NOT NULL,
    doc jsonb NOT NULL
);
CREATE INDEX staff_sessions_by_user ON staff_sessions (user_id);
