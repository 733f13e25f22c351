-- Everything the schema language cannot say, and SQLite's naming and typing traps, one of
-- each. SchemaImportTests checks that each is reported (never dropped silently) and that the
-- schema written still validates.
CREATE TABLE "Order Details" (
    "Order ID" INTEGER NOT NULL,
    "2nd line" TEXT,
    "select" TEXT,
    "Unit Price" MONEY NOT NULL DEFAULT 0,
    discount FLOATING POINT,
    label STRING,
    anything,
    blob_default BLOB DEFAULT X'00FF',
    created TIMESTAMP DEFAULT (datetime('now')),
    odd_default INTEGER DEFAULT (abs(random()) % 10),
    PRIMARY KEY ("Order ID")
) WITHOUT ROWID;

CREATE TABLE counters (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL COLLATE NOCASE UNIQUE,
    doubled INTEGER GENERATED ALWAYS AS (id * 2) VIRTUAL,
    status TEXT NOT NULL DEFAULT 'new' CHECK (status IN ('new', 'done'))
);
CREATE INDEX counters_active ON counters (name) WHERE status = 'new';
CREATE INDEX counters_lower ON counters (lower(name));
CREATE INDEX counters_desc ON counters (status DESC);

CREATE TABLE loose_keys (
    code TEXT PRIMARY KEY,
    counter_name TEXT REFERENCES counters (name),
    ghost_id INTEGER REFERENCES ghosts (id),
    counter_id INTEGER NOT NULL DEFAULT 0 REFERENCES counters (id) ON UPDATE CASCADE ON DELETE SET DEFAULT
        DEFERRABLE INITIALLY DEFERRED
);

CREATE TABLE no_key (
    note TEXT,
    "true" TEXT,
    "null" INTEGER,
    "we""ird: name" TEXT
);

CREATE VIRTUAL TABLE notes_fts USING fts5(body);

CREATE TABLE categories (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL
);
CREATE TABLE items (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL
);
-- A pure link table in the form schemagen itself would write for `Category.items`.
CREATE TABLE categories_items (
    category_id INTEGER NOT NULL REFERENCES categories (id) ON DELETE CASCADE,
    item_id INTEGER NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    PRIMARY KEY (category_id, item_id)
);
CREATE INDEX categories_items_item_id_idx ON categories_items (item_id);
