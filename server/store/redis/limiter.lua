-- Parley's tier limiter: token buckets refilled continuously at limit/window,
-- exact to the nanosecond, one script call per Take (atomic, one round trip).
-- The semantics are store/memlimit's, line for line.
--
-- Lua's numbers are doubles (53 bits), while times are unix nanoseconds and
-- the refill needs elapsed·limit in 128 bits, so the arithmetic is done on
-- small non-negative big integers: arrays of base-2^24 limbs, little end
-- first. Every value crosses the script boundary as a decimal string.
--
-- KEYS: the distinct bucket keys of the call.
-- ARGV[1] op ("take", "refund", "peek"), ARGV[2] now, ARGV[3] slack TTL (ms),
-- then per take: key index (1-based into KEYS), limit, window (ns), n.
-- Bucket hash fields: l limit, w window, t tokens, f frac, s last refill.

local B = 16777216

local function norm(a)
  local n = #a
  while n > 1 and a[n] == 0 do a[n] = nil; n = n - 1 end
  return a
end

local function copy(a)
  local r = {}
  for i = 1, #a do r[i] = a[i] end
  return r
end

local function fromdec(s)
  local a = {0}
  local i = 1
  while i <= #s do
    local chunk = string.sub(s, i, i + 5)
    i = i + 6
    local carry = tonumber(chunk)
    local mul = 10 ^ #chunk
    for j = 1, #a do
      local v = a[j] * mul + carry
      carry = math.floor(v / B)
      a[j] = v - carry * B
    end
    while carry > 0 do
      local c2 = math.floor(carry / B)
      a[#a + 1] = carry - c2 * B
      carry = c2
    end
  end
  return norm(a)
end

local function iszero(a) return #a == 1 and a[1] == 0 end

local function todec(a)
  if iszero(a) then return "0" end
  local x = copy(a)
  local parts = {}
  while not iszero(x) do
    local r = 0
    for j = #x, 1, -1 do
      local v = r * B + x[j]
      local q = math.floor(v / 1000000)
      r = v - q * 1000000
      if r < 0 then q = q - 1; r = r + 1000000 elseif r >= 1000000 then q = q + 1; r = r - 1000000 end
      x[j] = q
    end
    norm(x)
    table.insert(parts, 1, string.format("%06d", r))
  end
  local s = table.concat(parts)
  s = string.gsub(s, "^0+", "")
  return s
end

local function cmp(a, b)
  if #a ~= #b then return #a < #b and -1 or 1 end
  for i = #a, 1, -1 do
    if a[i] ~= b[i] then return a[i] < b[i] and -1 or 1 end
  end
  return 0
end

local function add(a, b)
  local r, carry = {}, 0
  for i = 1, math.max(#a, #b) do
    local v = (a[i] or 0) + (b[i] or 0) + carry
    if v >= B then r[i] = v - B; carry = 1 else r[i] = v; carry = 0 end
  end
  if carry > 0 then r[#r + 1] = carry end
  return norm(r)
end

-- sub returns a - b for a >= b.
local function sub(a, b)
  local r, borrow = {}, 0
  for i = 1, #a do
    local v = a[i] - (b[i] or 0) - borrow
    if v < 0 then r[i] = v + B; borrow = 1 else r[i] = v; borrow = 0 end
  end
  return norm(r)
end

local function mul(a, b)
  local r = {}
  for i = 1, #a + #b do r[i] = 0 end
  for i = 1, #a do
    local carry = 0
    local ai = a[i]
    for j = 1, #b do
      local v = r[i + j - 1] + ai * b[j] + carry
      carry = math.floor(v / B)
      r[i + j - 1] = v - carry * B
    end
    local k = i + #b
    while carry > 0 do
      local v = r[k] + carry
      carry = math.floor(v / B)
      r[k] = v - carry * B
      k = k + 1
    end
  end
  return norm(r)
end

-- divmod returns floor(a / b) and a mod b, b > 0, by binary long division.
local function divmod(a, b)
  if cmp(a, b) < 0 then return {0}, copy(a) end
  local q, r = {}, {0}
  for i = 1, #a do q[i] = 0 end
  for i = #a, 1, -1 do
    local limb = a[i]
    for bit = 23, 0, -1 do
      local p = 2 ^ bit
      local bv = math.floor(limb / p) % 2
      -- r = 2r + bv
      local carry = bv
      for j = 1, #r do
        local v = r[j] * 2 + carry
        if v >= B then r[j] = v - B; carry = 1 else r[j] = v; carry = 0 end
      end
      if carry > 0 then r[#r + 1] = carry end
      if cmp(r, b) >= 0 then
        r = sub(r, b)
        q[i] = q[i] + p
      end
    end
  end
  return norm(q), r
end

local ZERO = {0}

-- A bucket: limit, window, tokens, frac (< window), last; all big integers.
local function load(key, now, limit, window, lims, wins)
  local h = redis.call("HMGET", key, "l", "w", "t", "f", "s")
  if not h[1] then
    return {limit = limit, window = window, tokens = copy(limit), frac = {0}, last = now}
  end
  local b = {limit = fromdec(h[1]), window = fromdec(h[2]), tokens = fromdec(h[3]), frac = fromdec(h[4]), last = fromdec(h[5])}
  if h[1] ~= lims or h[2] ~= wins then
    -- New parameters (a tier change): keep the whole units, capped.
    b.limit, b.window, b.frac = limit, window, {0}
    if cmp(b.tokens, limit) > 0 then b.tokens = copy(limit) end
  end
  return b
end

local function full(b) return cmp(b.tokens, b.limit) >= 0 end
local function fill(b) b.tokens = copy(b.limit); b.frac = {0} end

local function refill(b, now)
  if cmp(now, b.last) <= 0 then return end
  local e = sub(now, b.last)
  b.last = now
  if full(b) or cmp(e, b.window) >= 0 then fill(b); return end
  local q, r = divmod(add(mul(e, b.limit), b.frac), b.window)
  if cmp(q, sub(b.limit, b.tokens)) >= 0 then fill(b); return end
  b.tokens = add(b.tokens, q)
  b.frac = r
end

local function clone(b)
  return {limit = b.limit, window = b.window, tokens = copy(b.tokens), frac = copy(b.frac), last = b.last}
end

-- wait is how long (ns) until b holds n units, n <= limit.
local function wait(b, n)
  if cmp(b.tokens, n) >= 0 then return {0} end
  local num = sub(mul(sub(n, b.tokens), b.window), b.frac)
  local q, r = divmod(num, b.limit)
  if not iszero(r) then q = add(q, {1}) end
  return q
end

local slack = tonumber(ARGV[3])

local function save(key, b)
  if full(b) then b.frac = {0} end
  redis.call("HSET", key, "l", todec(b.limit), "w", todec(b.window), "t", todec(b.tokens), "f", todec(b.frac), "s", todec(b.last))
  -- A missing bucket behaves as a full one, so it may go once it would be
  -- full again (plus slack for clock skew between gateways).
  local ms = tonumber(todec(wait(b, b.limit))) / 1000000
  ms = math.min(math.ceil(ms) + slack, 315360000000)
  redis.call("PEXPIRE", key, string.format("%d", ms))
end

local op, now = ARGV[1], fromdec(ARGV[2])

if op == "peek" or op == "refund" then
  local key, lims, wins, ns = KEYS[1], ARGV[5], ARGV[6], ARGV[7]
  local b = load(key, now, fromdec(lims), fromdec(wins), lims, wins)
  refill(b, now)
  if op == "refund" then
    local n = fromdec(ns)
    if cmp(n, sub(b.limit, b.tokens)) >= 0 then fill(b) else b.tokens = add(b.tokens, n) end
    if redis.call("EXISTS", key) == 1 then save(key, b) end
  end
  return {todec(b.tokens), todec(wait(b, b.limit))}
end

-- take
local work, byKey = {}, {}
local idx = {}
local allowed, denied, impossible = true, -1, false
local ntakes = (#ARGV - 3) / 4
for i = 1, ntakes do
  local base = 3 + (i - 1) * 4
  local ki, lims, wins, ns = tonumber(ARGV[base + 1]), ARGV[base + 2], ARGV[base + 3], ARGV[base + 4]
  local key = KEYS[ki]
  local e = byKey[key]
  if not e then
    local b = load(key, now, fromdec(lims), fromdec(wins), lims, wins)
    refill(b, now)
    e = {key = key, orig = b, b = clone(b), need = {0}}
    byKey[key] = e
    work[#work + 1] = e
  end
  idx[i] = e
  local n = fromdec(ns)
  e.need = add(e.need, n)
  local ok = false
  if cmp(n, e.b.limit) > 0 or cmp(e.need, e.b.limit) > 0 then
    impossible = true
  elseif cmp(e.b.tokens, n) >= 0 then
    e.b.tokens = sub(e.b.tokens, n)
    ok = true
  end
  if not ok and allowed then allowed, denied = false, i - 1 end
end

local out = {}
if not allowed then
  local retry = {0}
  if not impossible then
    for _, e in ipairs(work) do
      local w = wait(e.orig, e.need)
      if cmp(w, retry) > 0 then retry = w end
    end
  end
  out[1], out[2], out[3], out[4] = "0", tostring(denied), impossible and "1" or "0", todec(retry)
  for i = 1, ntakes do
    local b = idx[i].orig
    out[#out + 1] = todec(b.tokens)
    out[#out + 1] = todec(wait(b, b.limit))
  end
  return out
end
for _, e in ipairs(work) do save(e.key, e.b) end
out[1], out[2], out[3], out[4] = "1", "-1", "0", "0"
for i = 1, ntakes do
  local b = idx[i].b
  out[#out + 1] = todec(b.tokens)
  out[#out + 1] = todec(wait(b, b.limit))
end
return out
