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
-- Where the column already has this default (a store of this release opened the database
-- first), nothing is done: no lock, no ownership needed. Otherwise the ALTER needs the table's
-- owner and its exclusive lock: while it waits for that lock (at most --ddl-lock-timeout, 5 s by
-- default, then it fails and can be run again), every history write and read of the database
-- queues behind it, and standbys replay the same lock.

DO $schemagen$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE d.adrelid = to_regclass('schemagen_history') AND a.attname = 'token' AND pg_get_expr(d.adbin, d.adrelid) LIKE '%txid_current()%') THEN
        ALTER TABLE schemagen_history ALTER COLUMN token DROP IDENTITY IF EXISTS, ALTER COLUMN token SET DEFAULT (4611686018427387904 + txid_current());
    END IF;
END $schemagen$;
