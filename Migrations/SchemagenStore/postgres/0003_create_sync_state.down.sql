-- schemagen-migration: 1
-- schema: SchemagenStore
-- dialect: postgres
-- direction: down
-- from-version: 3
-- to-version: 2
-- transaction: yes
-- foreign-keys: on
-- loses-data: yes

-- Drops every sync server's state in this database (so `migrate down` asks for
-- --allow-destructive): the records' clocks are lost, so every record is stamped anew as the
-- server's own change, and devices sync again from the start.

DROP TABLE IF EXISTS schemagen_sync_devices;
DROP TABLE IF EXISTS schemagen_sync_records;
