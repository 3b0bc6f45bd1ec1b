-- What several instances share besides the records.

-- A change to what the client API caches per team (the team record: settings, features, keys;
-- its blacklist) is announced on commit, so that every instance drops its copy at once.
CREATE FUNCTION licensing_team_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'teams' THEN
        PERFORM pg_notify('licensing_team_changed', coalesce(NEW.id, OLD.id)::text);
    ELSE
        PERFORM pg_notify('licensing_team_changed', coalesce(NEW.team_id, OLD.team_id)::text);
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER teams_changed AFTER INSERT OR UPDATE OR DELETE ON teams
    FOR EACH ROW EXECUTE FUNCTION licensing_team_changed();
CREATE TRIGGER blacklist_changed AFTER INSERT OR UPDATE OF kind, value OR DELETE ON blacklist
    FOR EACH ROW EXECUTE FUNCTION licensing_team_changed();

-- Rate-limit counters: per limit, key and window (a sliding window estimated from the current
-- and the previous fixed window). Unlogged: counters need no crash safety, and skip the WAL.
CREATE UNLOGGED TABLE rate_limits (
    name text NOT NULL,
    key bytea NOT NULL,
    window_start bigint NOT NULL,
    count integer NOT NULL,
    PRIMARY KEY (name, key, window_start)
);

-- Outbox messages being delivered: an instance claims a message until this time, so that two
-- instances never send it at once.
ALTER TABLE outbox ADD COLUMN claimed_until bigint;
