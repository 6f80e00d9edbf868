-- dbconsole schema, version 4: the answers of writes made with an Idempotency-Key, each written
-- in the transaction of the write it answers and kept for a bounded time (`at`, in
-- microseconds since the Unix epoch, indexed for pruning). `key` is the scoped key's UTF-8
-- bytes (bytea: text can't hold a NUL).
CREATE TABLE idempotency_answers (
    key    bytea PRIMARY KEY,
    at     bigint NOT NULL,
    record bytea NOT NULL
);
CREATE INDEX idempotency_answers_at ON idempotency_answers (at);
