-- dbconsole schema, version 7: the outbox. `record` is the delivery in dbconsole's stored form;
-- `status` serves the listing by status (newest first, by id); `due_at` (microseconds) is when a
-- worker may claim it (its next attempt, or the end of its lease), null once delivered or dead,
-- so the claim's index holds only live deliveries; `version` is its `updated_at` in
-- microseconds, what a replace compares.
CREATE TABLE deliveries (
    id      text COLLATE "C" PRIMARY KEY,
    status  text COLLATE "C" NOT NULL,
    due_at  bigint,
    version bigint NOT NULL,
    record  bytea NOT NULL
);
CREATE INDEX deliveries_due ON deliveries (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX deliveries_status ON deliveries (status, id);
