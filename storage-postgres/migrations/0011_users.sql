-- Version 11: the people who use the console (their record, passkeys' public keys included),
-- and the server's own settings (the public URL a node recorded at its start).
CREATE TABLE users (
    name       text COLLATE "C" PRIMARY KEY,
    updated_at bigint NOT NULL,
    record     bytea NOT NULL
);

CREATE TABLE settings (
    name  text COLLATE "C" PRIMARY KEY,
    value text NOT NULL
);
