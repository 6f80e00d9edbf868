-- dbconsole schema, version 3: the listing filters. The fields a listing filters on, beside
-- the record (filled from it on every write, and for rows written before by the migration's
-- own step in Rust), each indexed with the id so that a filtered page reads in id order.
-- Group, tunnel and name are their UTF-8 bytes (bytea), as api_id: text can't hold a NUL, and
-- bytes compare in the order a prefix range needs.
ALTER TABLE databases
    ADD COLUMN adapter   text COLLATE "C",
    ADD COLUMN grp       bytea,
    ADD COLUMN tunnel_id bytea,
    ADD COLUMN name      bytea;
CREATE INDEX databases_adapter ON databases (adapter, id);
CREATE INDEX databases_grp ON databases (grp, id);
CREATE INDEX databases_tunnel_id ON databases (tunnel_id, id);
CREATE INDEX databases_name ON databases (name, id);

ALTER TABLE dashboards ADD COLUMN name bytea;
CREATE INDEX dashboards_name ON dashboards (name, id);
