-- A user's conversations, messages, chat settings, attachments, shares,
-- projects, memories, ratings, saved prompts and audit events may live on
-- a data cluster chosen by the user's logical shard (several URLs in
-- --postgres-url), where the users table has no rows: the first cluster
-- keeps users, sessions, keys and organisations. So those tables keep no
-- foreign key into users (users are never deleted, so no cascade is lost),
-- and the per-user counts and sums that a row lock on the user's row
-- serialised (storage quota, projects, memories, prompts) take an advisory
-- lock on the user's ID instead, which any cluster can take.
DO $$
DECLARE c record;
BEGIN
  FOR c IN SELECT conrelid::regclass AS tbl, conname FROM pg_constraint
           WHERE contype = 'f' AND confrelid = 'users'::regclass
             AND conrelid IN ('conversations'::regclass, 'chat_settings'::regclass, 'attachments'::regclass,
                              'projects'::regclass, 'memories'::regclass, 'message_feedback'::regclass,
                              'saved_prompts'::regclass)
  LOOP
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.tbl, c.conname);
  END LOOP;
END $$;
-- data_cluster holds, in each data cluster, its place in --postgres-url, so
-- that a reordered list (which would look for users' rows in the wrong
-- place) is refused.
CREATE TABLE data_cluster (place INT PRIMARY KEY CHECK (place >= 0));
CREATE UNIQUE INDEX data_cluster_one ON data_cluster ((true));
