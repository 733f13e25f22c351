-- schemagen-migration: 1
-- schema: SchemagenStore
-- dialect: postgres
-- direction: down
-- from-version: 2
-- to-version: 1
-- transaction: yes
-- foreign-keys: on
-- loses-data: no

-- Does nothing: the column keeps its ordered tokens, and going back to the identity column
-- would hand out tokens that stores of this release read out of order. Stores of earlier
-- releases work with ordered tokens (they take their lock, and the column's default gives
-- their rows ordered tokens), but while stores of this release write, their readers can miss
-- a transaction that commits late.

SELECT 1;
