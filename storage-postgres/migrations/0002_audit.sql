-- dbconsole schema, version 2: the audit trail. One row per change, written in the transaction
-- (or the statement) of the change it records. `record` is the event in dbconsole's stored
-- form; `at` is its time in microseconds since the Unix epoch, for retention.
CREATE TABLE audit_events (
    id          text COLLATE "C" PRIMARY KEY,
    resource_id text COLLATE "C" NOT NULL,
    at          bigint NOT NULL,
    record      bytea NOT NULL
);
CREATE INDEX audit_events_resource ON audit_events (resource_id, id);
CREATE INDEX audit_events_at ON audit_events (at);
