-- The client API's events.

-- A license's mark of a raised client event (license.expired: the expiration date it was raised
-- for), so that the event is raised once per date whichever instance sees the expiry first.
CREATE TABLE license_event_marks (
    license_id uuid PRIMARY KEY REFERENCES licenses (id) ON DELETE CASCADE,
    mark bigint NOT NULL
);

-- Which client events a team's endpoints want is read with the team: a change to an endpoint
-- drops every instance's copy, like a change to the team or its blacklist.
CREATE TRIGGER webhook_endpoints_changed AFTER INSERT OR UPDATE OR DELETE ON webhook_endpoints
    FOR EACH ROW EXECUTE FUNCTION licensing_team_changed();
