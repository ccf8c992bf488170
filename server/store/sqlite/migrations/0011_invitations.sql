-- Sign-up invitations (--signup invite): only the SHA-256 of a code is kept,
-- with a display prefix. A use is taken in the transaction that creates the
-- user, so a code with max_uses 1 makes one account however many sign-ups
-- race for it.
CREATE TABLE invitations (
    id           TEXT    PRIMARY KEY,
    code_hash    BLOB    NOT NULL UNIQUE,
    prefix       TEXT    NOT NULL,
    note         TEXT    NOT NULL,
    created_by   TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    max_uses     INTEGER NOT NULL CHECK (max_uses >= 1),
    uses         INTEGER NOT NULL DEFAULT 0 CHECK (uses >= 0 AND uses <= max_uses),
    last_used_at INTEGER,
    revoked_at   INTEGER
) STRICT;
CREATE INDEX invitations_created ON invitations(created_at DESC, id DESC);
