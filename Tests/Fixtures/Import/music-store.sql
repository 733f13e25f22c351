-- A record shop's database, as an app might have shipped it years ago: mixed naming styles,
-- NVARCHAR and NUMERIC declarations, composite keys, a composite foreign key, a self reference,
-- and foreign keys with and without ON DELETE actions. Used by SchemaImportTests.
PRAGMA foreign_keys = ON;

CREATE TABLE artists (
    id INTEGER PRIMARY KEY,
    name NVARCHAR(120) NOT NULL
);

CREATE TABLE albums (
    id INTEGER PRIMARY KEY,
    title NVARCHAR(160) NOT NULL,
    artist_id INTEGER NOT NULL REFERENCES artists (id) ON DELETE CASCADE,
    released DATE
);
CREATE INDEX albums_by_artist ON albums (artist_id);

CREATE TABLE "MediaType" (
    "MediaTypeId" INTEGER NOT NULL PRIMARY KEY,
    "Name" NVARCHAR(120)
);

CREATE TABLE genres (
    genre_code VARCHAR(8) NOT NULL PRIMARY KEY,
    name NVARCHAR(120) NOT NULL UNIQUE
);

CREATE TABLE tracks (
    id INTEGER PRIMARY KEY,
    name NVARCHAR(200) NOT NULL,
    album_id INTEGER REFERENCES albums (id) ON DELETE SET NULL,
    "MediaTypeId" INTEGER NOT NULL REFERENCES "MediaType" ("MediaTypeId"),
    genre_code VARCHAR(8) REFERENCES genres,
    composer NVARCHAR(220),
    milliseconds INTEGER NOT NULL,
    bytes INTEGER,
    unit_price NUMERIC(10,2) NOT NULL DEFAULT 0.99,
    explicit BOOLEAN NOT NULL DEFAULT 0
);
CREATE INDEX tracks_by_album ON tracks (album_id);
CREATE INDEX tracks_by_media_type ON tracks ("MediaTypeId");
CREATE INDEX tracks_by_genre ON tracks (genre_code);
CREATE INDEX tracks_by_name_and_composer ON tracks (name, composer);

CREATE TABLE playlists (
    id INTEGER PRIMARY KEY,
    name NVARCHAR(120) NOT NULL
);

CREATE TABLE playlist_track (
    playlist_id INTEGER NOT NULL REFERENCES playlists (id) ON DELETE CASCADE,
    track_id INTEGER NOT NULL REFERENCES tracks (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    PRIMARY KEY (playlist_id, track_id)
);
CREATE INDEX playlist_track_by_track ON playlist_track (track_id);

CREATE TABLE employees (
    "EmployeeId" INTEGER PRIMARY KEY,
    "LastName" NVARCHAR(20) NOT NULL,
    "FirstName" NVARCHAR(20) NOT NULL,
    "Title" NVARCHAR(30),
    "ReportsTo" INTEGER REFERENCES employees ("EmployeeId") ON DELETE SET NULL,
    "BirthDate" DATETIME,
    "HireDate" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "Email" NVARCHAR(60) NOT NULL
);
CREATE UNIQUE INDEX employees_email ON employees ("Email");
CREATE INDEX employees_by_manager ON employees ("ReportsTo");

CREATE TABLE customers (
    id INTEGER PRIMARY KEY,
    first_name NVARCHAR(40) NOT NULL,
    last_name NVARCHAR(20) NOT NULL,
    company NVARCHAR(80),
    country NVARCHAR(40) NOT NULL DEFAULT 'USA',
    email NVARCHAR(60) NOT NULL,
    support_rep_id INTEGER REFERENCES employees ("EmployeeId"),
    UNIQUE (email),
    CHECK (length(email) > 3)
);
CREATE INDEX customers_by_rep ON customers (support_rep_id);
CREATE INDEX customers_by_name ON customers (last_name, first_name);

CREATE TABLE invoices (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers (id) ON DELETE RESTRICT,
    invoice_date DATETIME NOT NULL,
    billing_country NVARCHAR(40),
    total NUMERIC(10,2) NOT NULL
);
CREATE INDEX invoices_by_customer ON invoices (customer_id);

CREATE TABLE invoice_lines (
    invoice_id INTEGER NOT NULL REFERENCES invoices (id) ON DELETE CASCADE,
    line_number INTEGER NOT NULL,
    track_id INTEGER NOT NULL REFERENCES tracks (id),
    unit_price NUMERIC(10,2) NOT NULL,
    quantity INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (invoice_id, line_number)
);
CREATE INDEX invoice_lines_by_track ON invoice_lines (track_id);

-- A refund points at one invoice line through its two-column key.
CREATE TABLE refunds (
    id INTEGER PRIMARY KEY,
    line_invoice_id INTEGER NOT NULL,
    line_line_number INTEGER NOT NULL,
    amount NUMERIC(10,2) NOT NULL,
    reason TEXT,
    FOREIGN KEY (line_invoice_id, line_line_number) REFERENCES invoice_lines (invoice_id, line_number) ON DELETE CASCADE
);
CREATE INDEX refunds_by_line ON refunds (line_invoice_id, line_line_number);

CREATE VIEW invoice_totals AS
    SELECT invoice_id, sum(unit_price * quantity) AS total FROM invoice_lines GROUP BY invoice_id;

CREATE TRIGGER invoices_keep_total AFTER INSERT ON invoice_lines BEGIN
    UPDATE invoices SET total = total + new.unit_price * new.quantity WHERE id = new.invoice_id;
END;

INSERT INTO artists VALUES (1, 'Nina Simone'), (2, 'Os Mutantes'), (3, 'Björk');
INSERT INTO albums VALUES (1, 'Pastel Blues', 1, '1965-10-01'), (2, 'Os Mutantes', 2, '1968-06-01'), (3, 'Homogenic', 3, NULL);
INSERT INTO "MediaType" VALUES (1, 'Lossless'), (2, 'AAC');
INSERT INTO genres VALUES ('jazz', 'Jazz'), ('trop', 'Tropicália'), ('elec', 'Electronic');
INSERT INTO tracks VALUES
    (1, 'Be My Husband', 1, 1, 'jazz', NULL, 163000, 5300000, 0.99, 0),
    (2, 'Sinnerman', 1, 1, 'jazz', 'Traditional', 622000, 20100000, 1.29, 0),
    (3, 'Panis et Circenses', 2, 2, 'trop', 'Gilberto Gil, Caetano Veloso', 218000, 3500000, 0.99, 0),
    (4, 'Jóga', 3, 1, 'elec', 'Björk, Sjón', 305000, 10200000, 1.29, 1);
INSERT INTO playlists VALUES (1, 'Late night'), (2, 'Sunday');
INSERT INTO playlist_track VALUES (1, 2, 1), (1, 4, 2), (2, 3, 1);
INSERT INTO employees VALUES
    (1, 'Adams', 'Andrew', 'General Manager', NULL, '1962-02-18 00:00:00', '2002-08-14 00:00:00', 'andrew@shop.example'),
    (2, 'Edwards', 'Nancy', 'Sales Manager', 1, '1958-12-08 00:00:00', '2002-05-01 00:00:00', 'nancy@shop.example'),
    (3, 'Peacock', 'Jane', 'Sales Support', 2, '1973-08-29 00:00:00', '2002-04-01 00:00:00', 'jane@shop.example');
INSERT INTO customers VALUES
    (1, 'Luís', 'Gonçalves', 'Embraer', 'Brazil', 'luis@embraer.example', 3),
    (2, 'Leonie', 'Köhler', NULL, 'Germany', 'leonie@mail.example', 3);
INSERT INTO invoices VALUES (1, 1, '2025-01-01 10:00:00', 'Brazil', 0), (2, 2, '2025-01-02 11:30:00', NULL, 0);
INSERT INTO invoice_lines VALUES (1, 1, 2, 1.29, 1), (1, 2, 3, 0.99, 2), (2, 1, 4, 1.29, 1);
INSERT INTO refunds VALUES (1, 1, 2, 0.99, 'scratched');
