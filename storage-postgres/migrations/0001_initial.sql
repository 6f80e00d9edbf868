-- dbconsole schema, version 1. Each aggregate is one row: its indexed columns, and `record`, the
-- whole record in dbconsole's stored form (a version byte and postcard; secrets as core sealed
-- them). Ids compare byte by byte (COLLATE "C"), as listings and keyset pagination expect.
CREATE TABLE meta (
    key   text PRIMARY KEY,
    value bytea NOT NULL
);

-- `api_id` is the caller's string as UTF-8 bytes: bytea, since text can't hold a NUL.
CREATE TABLE databases (
    id     text COLLATE "C" PRIMARY KEY,
    api_id bytea UNIQUE,
    record bytea NOT NULL
);

CREATE TABLE dashboards (
    id     text COLLATE "C" PRIMARY KEY,
    record bytea NOT NULL
);

-- A database's permissions and data protection (absent: the empty default), deleted with it.
CREATE TABLE access_control (
    database_id   text COLLATE "C" PRIMARY KEY REFERENCES databases (id) ON DELETE CASCADE,
    inherits_from text COLLATE "C",
    record        bytea NOT NULL
);
CREATE INDEX access_control_inherits_from ON access_control (inherits_from);

-- Callers' API keys and access tokens: SHA-256 digests only.
CREATE TABLE caller_keys (
    id     text COLLATE "C" PRIMARY KEY,
    digest bytea NOT NULL UNIQUE,
    record bytea NOT NULL
);
