-- schemagen-migration: 1
-- schema: SchemagenStore
-- dialect: postgres
-- direction: down
-- from-version: 1
-- to-version: 0
-- transaction: yes
-- foreign-keys: on
-- loses-data: yes

-- Drops the change history of every schema in this database. Stop the stores first: one that
-- opens afterwards creates the tables again, empty, and observers start over from no token.

DROP TABLE IF EXISTS schemagen_history_pruned;
DROP TABLE IF EXISTS schemagen_history;
