-- Policies: a team's named plans of license terms. A license on one names it in its document
-- (`policyId`); an index finds a policy's licenses, to count them, list them and detach them. A
-- change of a policy drops every instance's copy of the team (the client API applies policies
-- from it), like a change to the team's entitlements or products.

CREATE TABLE policies (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    created_at bigint NOT NULL,
    doc jsonb NOT NULL
);
CREATE INDEX policies_by_team ON policies (team_id, created_at, id);
CREATE INDEX licenses_by_policy ON licenses (team_id, (doc ->> 'policyId'))
    WHERE doc ->> 'policyId' IS NOT NULL;

CREATE TRIGGER policies_changed AFTER INSERT OR UPDATE OR DELETE ON policies
    FOR EACH ROW EXECUTE FUNCTION licensing_team_changed();
