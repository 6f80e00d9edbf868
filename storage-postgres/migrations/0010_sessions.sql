-- Version 10: browser sessions and one-time sign-in links, as SHA-256 digests only. The times
-- in microseconds since the epoch, so that expired ones are pruned by an index-free scan (there
-- are as many as people signed in).
CREATE TABLE sessions (
    id           text COLLATE "C" PRIMARY KEY,
    digest       bytea NOT NULL UNIQUE,
    browser      boolean NOT NULL,
    last_seen_at bigint NOT NULL,
    expires_at   bigint NOT NULL,
    record       bytea NOT NULL
);
