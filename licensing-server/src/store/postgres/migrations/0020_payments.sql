-- Payment integrations (Stripe, Paddle, Lemon Squeezy): a team's settings and rules per
-- provider, the events received (one row per delivery, kept 90 days), and the license of each
-- provider subscription or payment. An event's effect inserts its row as `applied` in the
-- transaction of the effect: the partial unique index lets one delivery of an event be applied,
-- across every instance; a link's primary key lets one license be made per subscription.

CREATE TABLE integrations (
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    provider text NOT NULL,
    doc jsonb NOT NULL,
    PRIMARY KEY (team_id, provider)
);

CREATE TABLE inbound_events (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    provider text NOT NULL,
    event_id text NOT NULL,
    status text NOT NULL,
    received_at bigint NOT NULL,
    doc jsonb NOT NULL
);
CREATE UNIQUE INDEX inbound_events_applied_once ON inbound_events (team_id, provider, event_id)
    WHERE status = 'applied';
CREATE INDEX inbound_events_by_team ON inbound_events (team_id, id);
CREATE INDEX inbound_events_by_time ON inbound_events (received_at);

CREATE TABLE payment_links (
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    provider text NOT NULL,
    subject text NOT NULL,
    doc jsonb NOT NULL,
    PRIMARY KEY (team_id, provider, subject)
);
