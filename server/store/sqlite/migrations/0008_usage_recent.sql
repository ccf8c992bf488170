-- Every user's usage records newest first (AdminService.ListUsage without a
-- user): the per-user indexes cannot serve that order.
CREATE INDEX usage_records_recent ON usage_records(created_at DESC, request_id DESC);
