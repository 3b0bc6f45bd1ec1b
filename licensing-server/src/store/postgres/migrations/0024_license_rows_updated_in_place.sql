-- Client requests write a license's last use (`last_active_at`) with every new device or
-- address they record and in every round of written-behind refreshes. An index on that column
-- made each such write a new row version with an entry in every one of the table's indexes
-- (the key search's trigrams among them): PostgreSQL updates a row in place (a heap-only
-- update) only when no indexed column changes and its page has room. The index served one
-- count, the licenses active since a moment (the dashboard's overview); that count now reads
-- the day of last use, a stored column that changes once a day per license, and filters the
-- day's rows by the exact time. Pages are left a fifth empty so that an updated row fits
-- beside the old one; rows written before move to such a page on their first update.
ALTER TABLE licenses
    ADD COLUMN active_day integer
    GENERATED ALWAYS AS ((last_active_at / 86400000)::integer) STORED;
DROP INDEX licenses_by_active;
CREATE INDEX licenses_by_active_day ON licenses (team_id, active_day);
ALTER TABLE licenses SET (fillfactor = 80);
