-- Version 9: user identities in one normal form (NFKC case fold). The queries' authors (the
-- author column and the records) are rewritten in Rust, from the records: see migrate.rs.
SELECT 1;
