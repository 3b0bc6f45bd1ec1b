-- Usage meters: a license's count of each meter in each period (a new period is a new row, so
-- nothing resets them), and the kept answers of usage events that make a retried event count
-- once, on every instance, for a day. Both go with their license.

CREATE TABLE usage_counters (
    license_id uuid NOT NULL REFERENCES licenses (id) ON DELETE CASCADE,
    meter text COLLATE "C" NOT NULL,
    period_start bigint NOT NULL,
    used bigint NOT NULL,
    PRIMARY KEY (license_id, meter, period_start)
);

CREATE TABLE usage_answers (
    license_id uuid NOT NULL REFERENCES licenses (id) ON DELETE CASCADE,
    event_id text COLLATE "C" NOT NULL,
    kept_at bigint NOT NULL,
    answer jsonb,
    PRIMARY KEY (license_id, event_id)
);
CREATE INDEX usage_answers_by_time ON usage_answers (kept_at);
