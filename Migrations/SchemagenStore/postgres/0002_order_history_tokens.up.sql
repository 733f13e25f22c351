-- schemagen-migration: 1
-- schema: SchemagenStore
-- dialect: postgres
-- direction: up
-- from-version: 1
-- to-version: 2
-- transaction: yes
-- foreign-keys: on
-- loses-data: no

-- History tokens ordered by transaction id, so writers no longer queue on one lock until
-- their commit: a token is 2^62 plus the id of the transaction that wrote the row, and a reader
-- only moves past tokens whose transactions have all finished. Tokens given before stay
-- below every new one, so observers and saved tokens go on where they were.
-- Stores of earlier releases that still run get ordered tokens from this default too, and
-- keep taking their lock. The ALTER holds the table's exclusive lock for an instant; it waits
-- at most 5 s for it (then fails and can be run again) rather than hold the app's history
-- writes behind it.

SET LOCAL lock_timeout = '5s';
ALTER TABLE schemagen_history ALTER COLUMN token DROP IDENTITY IF EXISTS, ALTER COLUMN token SET DEFAULT (4611686018427387904 + txid_current());
