-- The audit log: one row per audited write, inserted in the write's transaction. `doc` is the
-- whole entry; the columns are what the list filters on.

CREATE TABLE audit_log (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    at bigint NOT NULL,
    actor_kind text NOT NULL,
    actor_id uuid,
    action text NOT NULL,
    resource_type text NOT NULL,
    resource_id text NOT NULL,
    doc jsonb NOT NULL
);
CREATE INDEX audit_log_by_team ON audit_log (team_id, at, id);
CREATE INDEX audit_log_by_resource ON audit_log (team_id, resource_type, resource_id, at);
CREATE INDEX audit_log_by_time ON audit_log (at);
