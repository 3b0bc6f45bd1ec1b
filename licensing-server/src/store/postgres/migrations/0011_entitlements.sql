-- Entitlements: a team's feature definitions, each with a code unique in the team. Licenses and
-- products grant them through their documents' entitlementIds (an index finds the licenses that
-- list one, so that deleting it detaches it without reading the others). A change of an
-- entitlement or of a product drops every instance's copy of the team (the client API checks
-- entitlements from it), like a change to the team or its blacklist.

CREATE TABLE entitlements (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    code text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    doc jsonb NOT NULL,
    CONSTRAINT entitlements_code_unique UNIQUE (team_id, code)
);
CREATE INDEX entitlements_by_team ON entitlements (team_id, created_at, id);
CREATE INDEX licenses_by_entitlement ON licenses USING gin ((doc -> 'entitlementIds'));

CREATE TRIGGER entitlements_changed AFTER INSERT OR UPDATE OR DELETE ON entitlements
    FOR EACH ROW EXECUTE FUNCTION licensing_team_changed();
CREATE TRIGGER products_changed AFTER INSERT OR UPDATE OR DELETE ON products
    FOR EACH ROW EXECUTE FUNCTION licensing_team_changed();
