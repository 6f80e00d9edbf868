-- dbconsole schema, version 8: the outbox by kind of receiver (`workflow`, `slack`). A node
-- claims only the deliveries it can send, so one set up without a Slack token leaves Slack's to
-- the nodes that have one; the claim's index leads with the kind. `kind` is filled from the
-- records in Rust, then made required.
ALTER TABLE deliveries ADD COLUMN kind text COLLATE "C";
DROP INDEX deliveries_due;
CREATE INDEX deliveries_due ON deliveries (kind, due_at) WHERE due_at IS NOT NULL;
