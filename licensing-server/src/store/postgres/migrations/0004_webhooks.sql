-- Webhooks: endpoints, the queue of events (inserted in the transaction of the write that
-- raised them) and one delivery per event and endpoint. `doc` is the whole record; the columns
-- are what the worker and the lists filter on.

CREATE TABLE webhook_endpoints (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    created_at bigint NOT NULL,
    doc jsonb NOT NULL
);
CREATE INDEX webhook_endpoints_by_team ON webhook_endpoints (team_id, created_at, id);

CREATE TABLE webhook_events (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    doc jsonb NOT NULL
);

CREATE TABLE webhook_deliveries (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    endpoint_id uuid NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id uuid NOT NULL,
    resource text NOT NULL,
    status text NOT NULL,
    next_attempt_at bigint,
    claimed_until bigint,
    created_at bigint NOT NULL,
    doc jsonb NOT NULL
);
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE status = 'PENDING';
CREATE INDEX webhook_deliveries_chain ON webhook_deliveries (endpoint_id, resource, event_id, id)
    WHERE status = 'PENDING';
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (created_at)
    WHERE status <> 'PENDING';
