-- The ledger's tables (billing_accounts, reservations, reservation_budgets,
-- ledger_adjustments, budgets, usage_records, usage_outbox) may live on a
-- PostgreSQL cluster of their own (--billing-postgres-url), where users and
-- organizations have no rows. So they keep no foreign key into those tables
-- (neither users nor organizations are ever deleted, so no cascade is
-- lost), and a budget carries its organisation's time zone, which the hold
-- reads to place its window, instead of joining organizations for it.
DO $$
DECLARE c record;
BEGIN
  FOR c IN SELECT conrelid::regclass AS tbl, conname FROM pg_constraint
           WHERE contype = 'f' AND conrelid IN ('billing_accounts'::regclass, 'budgets'::regclass)
             AND confrelid IN ('users'::regclass, 'organizations'::regclass)
  LOOP
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.tbl, c.conname);
  END LOOP;
END $$;
ALTER TABLE budgets ADD COLUMN time_zone TEXT NOT NULL DEFAULT 'UTC';
UPDATE budgets b SET time_zone = o.time_zone FROM organizations o WHERE o.id = b.org_id;
