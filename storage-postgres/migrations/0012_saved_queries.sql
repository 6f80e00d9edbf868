-- Version 12: saved queries (the id, the version a change compares, the record).
CREATE TABLE saved_queries (
    id         text COLLATE "C" PRIMARY KEY,
    updated_at bigint NOT NULL,
    record     bytea NOT NULL
);
