-- Parley's shared load board: one hash, a field per gateway holding
-- "busy total expires_ms". Publishes the caller's figures, drops the
-- expired ones, and returns the sums of the rest (as strings: Lua numbers
-- would be truncated to integers on the way out).
-- KEYS[1] the hash; ARGV[1] gateway, ARGV[2] busy, ARGV[3] total,
-- ARGV[4] now (ms), ARGV[5] expiry (ms).
local now = tonumber(ARGV[4])
redis.call("HSET", KEYS[1], ARGV[1], ARGV[2] .. " " .. ARGV[3] .. " " .. ARGV[5])
local all = redis.call("HGETALL", KEYS[1])
local busy, total = 0, 0
for i = 1, #all, 2 do
  local b, t, exp = string.match(all[i + 1], "^(%S+) (%S+) (%S+)$")
  if not exp or tonumber(exp) < now then
    redis.call("HDEL", KEYS[1], all[i])
  else
    busy = busy + tonumber(b)
    total = total + tonumber(t)
  end
end
redis.call("PEXPIRE", KEYS[1], 60000)
return {tostring(busy), tostring(total)}
