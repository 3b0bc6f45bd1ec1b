-- The first schema. Times are milliseconds since the Unix epoch (bigint), as the model keeps
-- them; ids are UUIDs. Each aggregate keeps its whole record in `doc` (the model's JSON) and, as
-- columns, what SQL filters, sorts, joins or changes on its own; a column is the truth where
-- both hold a value (`last_active_at`, `last_used_at`, `hits`).

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE teams (
    id uuid PRIMARY KEY,
    created_at bigint NOT NULL,
    doc jsonb NOT NULL
);

CREATE TABLE api_keys (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    hash bytea NOT NULL UNIQUE,
    created_at bigint NOT NULL,
    last_used_at bigint,
    doc jsonb NOT NULL
);
CREATE INDEX api_keys_by_team ON api_keys (team_id, created_at, id);

-- Counts of the lists that grow large, so that an unfiltered page does not count its team.
CREATE TABLE team_counts (
    team_id uuid PRIMARY KEY REFERENCES teams (id) ON DELETE CASCADE,
    licenses bigint NOT NULL,
    customers bigint NOT NULL
);

CREATE TABLE customers (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    -- Lower-cased as the server lower-cases (Unicode), compared byte by byte.
    full_name_key text COLLATE "C",
    email_key text COLLATE "C",
    username_key text COLLATE "C",
    doc jsonb NOT NULL
);
CREATE INDEX customers_by_created ON customers (team_id, created_at, id);
CREATE INDEX customers_by_updated ON customers (team_id, updated_at, id);
CREATE INDEX customers_by_name ON customers (team_id, full_name_key NULLS FIRST, id);
CREATE INDEX customers_by_email ON customers (team_id, email_key NULLS FIRST, id);
CREATE INDEX customers_by_username ON customers (team_id, username_key NULLS FIRST, id);

CREATE TABLE products (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    name_key text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    doc jsonb NOT NULL
);
CREATE INDEX products_by_team ON products (team_id, created_at, id);

CREATE TABLE branches (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    product_id uuid NOT NULL REFERENCES products (id) ON DELETE CASCADE,
    name text COLLATE "C" NOT NULL,
    doc jsonb NOT NULL,
    CONSTRAINT branches_name_unique UNIQUE (product_id, name)
);

CREATE TABLE licenses (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    license_key text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    last_active_at bigint,
    customer_ids uuid[] NOT NULL,
    product_ids uuid[] NOT NULL,
    doc jsonb NOT NULL,
    CONSTRAINT licenses_key_unique UNIQUE (team_id, license_key)
);
CREATE INDEX licenses_by_created ON licenses (team_id, created_at, id);
CREATE INDEX licenses_by_updated ON licenses (team_id, updated_at, id);
CREATE INDEX licenses_by_active ON licenses (team_id, last_active_at);
CREATE INDEX licenses_by_customer ON licenses USING gin (customer_ids);
CREATE INDEX licenses_by_product ON licenses USING gin (product_ids);
CREATE INDEX licenses_key_search ON licenses USING gin (license_key gin_trgm_ops);

CREATE TABLE releases (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL,
    product_id uuid NOT NULL REFERENCES products (id),
    branch_id uuid REFERENCES branches (id),
    version text COLLATE "C" NOT NULL,
    version_key text COLLATE "C" NOT NULL,
    status text NOT NULL,
    latest boolean NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    allowed_license_ids uuid[] NOT NULL,
    doc jsonb NOT NULL
);
CREATE UNIQUE INDEX releases_version_unique ON releases
    (product_id, coalesce(branch_id, '00000000-0000-0000-0000-000000000000'::uuid), version);
CREATE INDEX releases_by_team ON releases (team_id, created_at, id);
CREATE INDEX releases_by_allowed_license ON releases USING gin (allowed_license_ids);

-- A license's devices and addresses: keyed by the license and a digest of the identifier (or
-- the address as 16 bytes), so that a request reads its own record by key.
CREATE TABLE hwids (
    license_id uuid NOT NULL REFERENCES licenses (id) ON DELETE CASCADE,
    digest bytea NOT NULL,
    id uuid NOT NULL,
    identifier text NOT NULL,
    forgotten boolean NOT NULL,
    last_seen_at bigint NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    PRIMARY KEY (license_id, digest)
);

CREATE TABLE ips (
    license_id uuid NOT NULL REFERENCES licenses (id) ON DELETE CASCADE,
    address bytea NOT NULL,
    id uuid NOT NULL,
    forgotten boolean NOT NULL,
    country text,
    alpha2 text,
    alpha3 text,
    last_seen_at bigint NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    PRIMARY KEY (license_id, address)
);

CREATE TABLE blacklist (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    kind text NOT NULL,
    value text NOT NULL,
    created_at bigint NOT NULL,
    hits bigint NOT NULL,
    doc jsonb NOT NULL,
    CONSTRAINT blacklist_unique UNIQUE (team_id, kind, value)
);

CREATE TABLE hourly_stats (
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    hour bigint NOT NULL,
    doc jsonb NOT NULL,
    PRIMARY KEY (team_id, hour)
);

CREATE TABLE outbox (
    id uuid PRIMARY KEY,
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    next_attempt_at bigint NOT NULL,
    doc jsonb NOT NULL
);
CREATE INDEX outbox_due ON outbox (next_attempt_at, id);

CREATE TABLE mail_days (
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    day bigint NOT NULL,
    queued bigint NOT NULL,
    PRIMARY KEY (team_id, day)
);

CREATE TABLE session_keys (
    team_id uuid NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
    fingerprint bytea NOT NULL,
    used_at bigint NOT NULL,
    PRIMARY KEY (team_id, fingerprint)
);
CREATE INDEX session_keys_by_time ON session_keys (team_id, used_at);

-- Release files, in chunks, so that every instance serves every file and a download streams.
CREATE TABLE release_files (
    key text NOT NULL,
    chunk integer NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (key, chunk)
);
