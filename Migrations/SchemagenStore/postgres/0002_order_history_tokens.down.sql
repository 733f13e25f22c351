-- schemagen-migration: 1
-- schema: SchemagenStore
-- dialect: postgres
-- direction: down
-- from-version: 2
-- to-version: 1
-- transaction: yes
-- foreign-keys: on
-- loses-data: no

-- Nothing to undo: stores of earlier releases read and write ordered tokens too (they keep
-- their lock, and the column's default gives their rows ordered tokens), and going back to
-- the identity column would hand out tokens that stores of this release read out of order.

SELECT 1;
