-- The license list's filters as columns: suspended, expiration type, and the expiry moment
-- (`status=EXPIRED` is `expires_at <= now`). Written with the document by every license write.

ALTER TABLE licenses
    ADD COLUMN suspended boolean NOT NULL DEFAULT false,
    ADD COLUMN expiration_type text NOT NULL DEFAULT 'NEVER',
    ADD COLUMN expires_at bigint;

UPDATE licenses SET
    suspended = coalesce((doc ->> 'suspended')::boolean, false),
    expiration_type = coalesce(doc ->> 'expirationType', 'NEVER'),
    expires_at = CASE
        WHEN doc ->> 'expirationType' = 'NEVER' OR doc ->> 'expirationDate' IS NULL THEN NULL
        ELSE (extract(epoch FROM (doc ->> 'expirationDate')::timestamptz) * 1000)::bigint
    END;

-- Few licenses are suspended: the list of them is read from a small index.
CREATE INDEX licenses_suspended ON licenses (team_id, created_at, id) WHERE suspended;
CREATE INDEX licenses_by_expiry ON licenses (team_id, expires_at);
