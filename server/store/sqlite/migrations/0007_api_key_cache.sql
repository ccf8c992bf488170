-- api_keys.response_cache: the key's own response cache default, used when a
-- request sends no Parley-Cache header: '' (the operator's), 'on' or 'off'.
ALTER TABLE api_keys ADD COLUMN response_cache TEXT NOT NULL DEFAULT ''
    CHECK (response_cache IN ('', 'on', 'off'));
