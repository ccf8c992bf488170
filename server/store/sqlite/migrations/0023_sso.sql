-- Single sign-on (OpenID Connect): an organisation's email domain, whose
-- people join it when they first sign in through the identity provider; a
-- team's provider group; and the provider identities (issuer, subject)
-- linked to users, so an address changed at the provider does not move a
-- sign-in to another user.
ALTER TABLE organizations ADD COLUMN sso_domain TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX organizations_sso_domain ON organizations (sso_domain) WHERE sso_domain <> '';
ALTER TABLE teams ADD COLUMN sso_group TEXT NOT NULL DEFAULT '';

CREATE TABLE identities (
  issuer     TEXT   NOT NULL,
  subject    TEXT   NOT NULL,
  user_id    TEXT   NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (issuer, subject)
);
CREATE INDEX identities_user ON identities (user_id);
