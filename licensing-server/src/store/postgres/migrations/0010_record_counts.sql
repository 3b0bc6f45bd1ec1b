-- What the atomic step reads, whatever a license holds: each license's count of its device and
-- address records (the cap on stored records is checked without reading them), and each kind's
-- records by when they were last seen, counting ones and forgotten ones apart (a limit with the
-- team's timeout reads the records within it, up to the limit; making room under the cap reads
-- the oldest records that count against nothing, up to the batch it drops).

ALTER TABLE licenses
    ADD COLUMN hwid_records integer NOT NULL DEFAULT 0,
    ADD COLUMN ip_records integer NOT NULL DEFAULT 0;
UPDATE licenses l SET hwid_records = c.n
  FROM (SELECT license_id, count(*) AS n FROM hwids GROUP BY license_id) c
 WHERE c.license_id = l.id;
UPDATE licenses l SET ip_records = c.n
  FROM (SELECT license_id, count(*) AS n FROM ips GROUP BY license_id) c
 WHERE c.license_id = l.id;

CREATE INDEX hwids_counting ON hwids (license_id, last_seen_at, id) WHERE NOT forgotten;
CREATE INDEX hwids_forgotten ON hwids (license_id, last_seen_at, id) WHERE forgotten;
CREATE INDEX ips_counting ON ips (license_id, last_seen_at, id) WHERE NOT forgotten;
CREATE INDEX ips_forgotten ON ips (license_id, last_seen_at, id) WHERE forgotten;
