-- Organisations (store.Organizations): a shared balance that team and
-- member keys draw on, and budgets at every level. An organisation's money
-- is the billing account of its billing user, a users row made with it that
-- cannot sign in, so the ledger (billing_accounts, reservations, usage) is
-- the same for people and organisations. Times are Unix nanoseconds;
-- budget windows start at window_start (the period's first instant in the
-- organisation's time zone; 0 for a total budget).
CREATE TABLE organizations (
  id              TEXT    PRIMARY KEY,
  name            TEXT    NOT NULL,
  billing_user_id TEXT    NOT NULL UNIQUE REFERENCES users (id) ON DELETE CASCADE,
  time_zone       TEXT    NOT NULL,
  created_by      TEXT    NOT NULL,
  created_at      BIGINT NOT NULL
);

CREATE TABLE org_members (
  org_id     TEXT    NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  user_id    TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role       TEXT    NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'billing_reader')),
  created_at BIGINT NOT NULL,
  PRIMARY KEY (org_id, user_id)
);
CREATE INDEX org_members_user ON org_members (user_id);

CREATE TABLE teams (
  id         TEXT    PRIMARY KEY,
  org_id     TEXT    NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  name       TEXT    NOT NULL,
  created_at BIGINT NOT NULL,
  UNIQUE (org_id, name)
);

CREATE TABLE team_members (
  team_id    TEXT    NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  user_id    TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role       TEXT    NOT NULL CHECK (role IN ('admin', 'member')),
  created_at BIGINT NOT NULL,
  PRIMARY KEY (team_id, user_id)
);
CREATE INDEX team_members_user ON team_members (user_id);

-- One budget per scope: the organisation, a team, a key or a member.
CREATE TABLE budgets (
  id             TEXT    PRIMARY KEY,
  org_id         TEXT    NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
  scope          TEXT    NOT NULL CHECK (scope IN ('organization', 'team', 'key', 'member')),
  scope_id       TEXT    NOT NULL,
  period         TEXT    NOT NULL CHECK (period IN ('daily', 'weekly', 'monthly', 'total')),
  limit_nanos    BIGINT NOT NULL CHECK (limit_nanos >= 0),
  window_start   BIGINT NOT NULL,
  spent_nanos    BIGINT NOT NULL DEFAULT 0 CHECK (spent_nanos >= 0),
  reserved_nanos BIGINT NOT NULL DEFAULT 0 CHECK (reserved_nanos >= 0),
  updated_at     BIGINT NOT NULL,
  UNIQUE (org_id, scope, scope_id)
);

-- The budgets a hold was taken against, and in which of their windows.
CREATE TABLE reservation_budgets (
  reservation_id TEXT    NOT NULL,
  budget_id      TEXT    NOT NULL,
  amount_nanos   BIGINT NOT NULL,
  window_start   BIGINT NOT NULL,
  PRIMARY KEY (reservation_id, budget_id)
);

-- Keys of an organisation: user_id is its billing user, created_by the
-- member who made it; models is a JSON array (all when empty), allowed_ips
-- one of CIDR prefixes (any when empty); rpm and tpm 0 for no limit.
ALTER TABLE api_keys ADD COLUMN org_id TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN team_id TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN created_by TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN models TEXT NOT NULL DEFAULT '[]';
ALTER TABLE api_keys ADD COLUMN allowed_ips TEXT NOT NULL DEFAULT '[]';
ALTER TABLE api_keys ADD COLUMN rpm BIGINT NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN tpm BIGINT NOT NULL DEFAULT 0;
CREATE INDEX api_keys_org ON api_keys (org_id, created_at DESC, id DESC) WHERE org_id <> '';
