-- A license key search leaves the hyphens out of both the key and the search, so that a key
-- typed or pasted without them is found: the trigram index covers the key without its hyphens.

DROP INDEX IF EXISTS licenses_key_search;
CREATE INDEX licenses_key_search ON licenses USING gin (replace(license_key, '-', '') gin_trgm_ops);
