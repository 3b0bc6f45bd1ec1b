-- A staff account's address is unique in its team, not on the whole server: a person may have
-- an account in each of several teams, and inviting an address tells nothing of other teams.

ALTER TABLE staff_users DROP CONSTRAINT staff_users_email_unique;
ALTER TABLE staff_users ADD CONSTRAINT staff_users_team_email_unique UNIQUE (team_id, email);
CREATE INDEX staff_users_by_email ON staff_users (email, created_at, id);
