-- dbconsole schema, version 6: the query history. `record` is the query in dbconsole's stored
-- form; `database_id`, `author` and `status` serve the history's filters (newest first, by id);
-- `version` is its `updated_at` in microseconds, what a replace compares.
CREATE TABLE queries (
    id          text COLLATE "C" PRIMARY KEY,
    database_id text COLLATE "C" NOT NULL,
    author      text COLLATE "C" NOT NULL,
    status      text COLLATE "C" NOT NULL,
    version     bigint NOT NULL,
    record      bytea NOT NULL
);
CREATE INDEX queries_database ON queries (database_id, id);
CREATE INDEX queries_author ON queries (author, id);
CREATE INDEX queries_status ON queries (status, id);
