-- An organisation's invitation links share the sign-up invitations' table
-- (code hash, limits, life): org_id is empty for a sign-up invitation.
ALTER TABLE invitations ADD COLUMN org_id TEXT NOT NULL DEFAULT '';
ALTER TABLE invitations ADD COLUMN role TEXT NOT NULL DEFAULT '';
ALTER TABLE invitations ADD COLUMN team_id TEXT NOT NULL DEFAULT '';
ALTER TABLE invitations ADD COLUMN team_role TEXT NOT NULL DEFAULT '';
ALTER TABLE invitations ADD COLUMN email TEXT NOT NULL DEFAULT '';
CREATE INDEX invitations_org ON invitations (org_id, created_at DESC, id DESC) WHERE org_id <> '';
