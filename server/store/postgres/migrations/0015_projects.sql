-- Projects (store.Projects): a user's workspaces in the web chat, each with
-- instructions for its chats and a vector store of its own (its files).
CREATE TABLE projects (
    id              TEXT   PRIMARY KEY,
    user_id         TEXT   NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name            TEXT   NOT NULL,
    instructions    TEXT   NOT NULL,
    vector_store_id TEXT   NOT NULL,
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX projects_list ON projects(user_id, updated_at DESC, id DESC);

-- The project a conversation belongs to ('' for none, as every conversation
-- stored before this is), set at its creation. No foreign key: a project's
-- conversations are deleted by the caller, before the project. A constant
-- default rewrites no rows.
ALTER TABLE conversations ADD COLUMN project_id TEXT NOT NULL DEFAULT '';
CREATE INDEX conversations_project ON conversations(user_id, project_id, updated_at DESC, id DESC);
