-- schemagen-migration: 1
-- schema: SchemagenStore
-- dialect: postgres
-- direction: down
-- from-version: 1
-- to-version: 0
-- transaction: yes
-- foreign-keys: on
-- loses-data: yes

-- Drops the change history of every schema in this database (so `migrate down` asks for
-- --allow-destructive). Stop the stores first: a store still open fails to commit until it
-- opens again, one that opens creates the tables again, empty, and observers start over.

DROP TABLE IF EXISTS schemagen_history_pruned;
DROP TABLE IF EXISTS schemagen_history;
