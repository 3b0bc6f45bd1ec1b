-- A change to what the client API caches per license (the license's record; whether one of its
-- device or address records still counts) is announced on commit, with the team's id and the
-- license's key (its old key, when the key changed), so that every instance drops its copy at
-- once. A refresh of lastActiveAt or lastSeenAt, or a new record, announces nothing: a cached
-- license only ever admits devices and addresses whose records counted when it was read.
CREATE FUNCTION licensing_license_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'licenses' THEN
        PERFORM pg_notify('licensing_license_changed', OLD.team_id::text || ' ' || OLD.license_key);
    ELSE
        PERFORM pg_notify('licensing_license_changed', l.team_id::text || ' ' || l.license_key)
            FROM licenses l WHERE l.id = OLD.license_id;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER licenses_changed AFTER UPDATE ON licenses FOR EACH ROW
    WHEN (OLD.doc IS DISTINCT FROM NEW.doc
          OR OLD.license_key IS DISTINCT FROM NEW.license_key
          OR OLD.customer_ids IS DISTINCT FROM NEW.customer_ids
          OR OLD.product_ids IS DISTINCT FROM NEW.product_ids)
    EXECUTE FUNCTION licensing_license_changed();
CREATE TRIGGER licenses_deleted AFTER DELETE ON licenses FOR EACH ROW
    EXECUTE FUNCTION licensing_license_changed();
CREATE TRIGGER hwids_changed AFTER UPDATE OF forgotten ON hwids FOR EACH ROW
    WHEN (OLD.forgotten IS DISTINCT FROM NEW.forgotten)
    EXECUTE FUNCTION licensing_license_changed();
CREATE TRIGGER hwids_deleted AFTER DELETE ON hwids FOR EACH ROW
    EXECUTE FUNCTION licensing_license_changed();
CREATE TRIGGER ips_changed AFTER UPDATE OF forgotten ON ips FOR EACH ROW
    WHEN (OLD.forgotten IS DISTINCT FROM NEW.forgotten)
    EXECUTE FUNCTION licensing_license_changed();
CREATE TRIGGER ips_deleted AFTER DELETE ON ips FOR EACH ROW
    EXECUTE FUNCTION licensing_license_changed();
