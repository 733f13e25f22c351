-- schemagen-migration: 1
-- schema: SchemagenStore
-- dialect: postgres
-- direction: down
-- from-version: 4
-- to-version: 3
-- transaction: yes
-- foreign-keys: on
-- loses-data: yes

-- Drops the notes of records that left a user's scope (so `migrate down` asks for
-- --allow-destructive): devices that have not pulled since keep those records.

DROP TABLE IF EXISTS schemagen_sync_departures;
