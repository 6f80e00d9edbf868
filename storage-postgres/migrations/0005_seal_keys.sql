-- dbconsole schema, version 5: seal keys with ids (README, "Rotating the secret key").
--
-- `seal_keys` lists every key a stored secret may be sealed under, with its key check value;
-- exactly one is current. Each database row lists the keys its secrets are sealed under
-- (`databases.seal_keys`), and a trigger refuses a row whose secrets are not all sealed under
-- the current key (SQLSTATE DBC01, message 'dbconsole seal key <current>'). The trigger reads
-- `seal_keys` with a fresh snapshot (a volatile function), so a write that waited for a lock
-- sees a rotation that committed meanwhile. Both tables are filled from the key check value
-- and the records at migration, by the node that migrates.
CREATE TABLE seal_keys (
    id        bigint PRIMARY KEY,
    key_check bytea NOT NULL,
    current   boolean NOT NULL
);
CREATE UNIQUE INDEX seal_keys_one_current ON seal_keys (current) WHERE current;

ALTER TABLE databases ADD COLUMN seal_keys bigint[] NOT NULL DEFAULT '{}';

CREATE FUNCTION check_seal_keys() RETURNS trigger
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $$
DECLARE
    current_key bigint;
BEGIN
    IF cardinality(NEW.seal_keys) = 0 THEN
        RETURN NEW;
    END IF;
    SELECT id INTO current_key FROM seal_keys WHERE current;
    IF current_key IS NULL OR EXISTS (SELECT 1 FROM unnest(NEW.seal_keys) AS k(id)
                                       WHERE k.id <> current_key) THEN
        RAISE EXCEPTION 'dbconsole seal key %', current_key USING ERRCODE = 'DBC01';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER databases_seal_keys BEFORE INSERT OR UPDATE OF record, seal_keys ON databases
    FOR EACH ROW EXECUTE FUNCTION check_seal_keys();
