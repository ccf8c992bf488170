-- Parley's tier limiter: token buckets refilled continuously at limit/window,
-- exact to the nanosecond, one script call per Take (atomic, one round trip).
-- The semantics are store/memlimit's, line for line.
--
-- Lua's numbers are doubles: integers are exact below 2^53. Every stored
-- quantity stays below that (the Go side refuses a limit or window of 2^53 or
-- more: a window under 104 days), times are kept as (seconds, nanoseconds),
-- and the two products that can pass 2^53 (elapsed·limit in a refill,
-- missing·window in a wait) are divided exactly by binary long
-- multiplication modulo the divisor (mdm). Numbers are written with %.0f,
-- never with Lua's lossy default formatting.
--
-- KEYS: the distinct bucket keys of the call.
-- ARGV[1] op ("take", "refund", "peek"), ARGV[2] now (unix seconds),
-- ARGV[3] its nanoseconds, ARGV[4] slack TTL (ms), then per take: key index
-- (1-based into KEYS), limit, window (ns), n.
-- Bucket hash fields: l limit, w window, t tokens, f frac, s and n the last
-- refill (unix seconds, nanoseconds).

local MAXS = 9007199254740991 -- 2^53 - 1

-- qr returns floor(x / d) and x mod d for 0 <= x, 0 < d, both below 2^53:
-- the floating-point quotient is off by at most one, so correct it.
local function qr(x, d)
  local q = math.floor(x / d)
  local r = x - q * d
  while r < 0 do q = q - 1; r = r + d end
  while r >= d do q = q + 1; r = r - d end
  return q, r
end

-- mdm returns floor(a·b / d) and a·b mod d for a, b, d below 2^53 whose
-- quotient is below 2^53, exactly, even when a·b is not: binary long
-- multiplication modulo d, in which every intermediate stays below d.
local function mdm(a, b, d)
  if a * b <= MAXS then return qr(a * b, d) end
  local aq, ar = qr(a, d)
  local q, r = 0, 0
  local p = 4503599627370496 -- 2^52
  while p > b do p = p / 2 end
  local bb = b
  while p >= 1 do
    if r >= d - r then r = r - (d - r); q = q + q + 1 else r = r + r; q = q + q end
    if bb >= p then
      bb = bb - p
      if r >= d - ar then r = r - (d - ar); q = q + 1 else r = r + ar end
    end
    p = p / 2
  end
  return aq * b + q, r
end

-- muldiv returns floor((a·b + c) / d) and the remainder, c < d.
local function muldiv(a, b, c, d)
  local q, r = mdm(a, b, d)
  if r >= d - c then return q + 1, r - (d - c) end
  return q, r + c
end

-- mulsubdivceil returns ceil((a·b - c) / d) for a·b >= c.
local function mulsubdivceil(a, b, c, d)
  local q, r = mdm(a, b, d)
  local cq, cr = qr(c, d)
  q, r = q - cq, r - cr
  if r < 0 then q, r = q - 1, r + d end
  if r > 0 then q = q + 1 end
  return q
end

local function fmt(x) return string.format("%.0f", x) end

local nowS, nowN, slack = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])

local function load(key, limit, window)
  local h = redis.call("HMGET", key, "l", "w", "t", "f", "s", "n")
  if not h[1] then
    return {limit = limit, window = window, tokens = limit, frac = 0, s = nowS, n = nowN}
  end
  local b = {limit = tonumber(h[1]), window = tonumber(h[2]), tokens = tonumber(h[3]), frac = tonumber(h[4]), s = tonumber(h[5]), n = tonumber(h[6])}
  if b.limit ~= limit or b.window ~= window then
    -- New parameters (a tier change): keep the whole units, capped.
    b.limit, b.window, b.frac = limit, window, 0
    if b.tokens > limit then b.tokens = limit end
  end
  return b
end

local function fill(b) b.tokens = b.limit; b.frac = 0 end

-- refill adds the units accrued since the last refill. Time never moves
-- backwards.
local function refill(b)
  local ds = nowS - b.s
  local e
  if ds > 9000000 then
    e = MAXS -- more than any window
  else
    e = ds * 1000000000 + (nowN - b.n)
  end
  if e <= 0 then return end
  b.s, b.n = nowS, nowN
  if b.tokens >= b.limit or e >= b.window then fill(b); return end
  local q, r = muldiv(e, b.limit, b.frac, b.window)
  if q >= b.limit - b.tokens then fill(b); return end
  b.tokens = b.tokens + q
  b.frac = r
end

-- wait is how long (ns) until b holds n units, n <= limit.
local function wait(b, n)
  if b.tokens >= n then return 0 end
  return mulsubdivceil(n - b.tokens, b.window, b.frac, b.limit)
end

local function save(key, b, resetWait)
  if b.tokens >= b.limit then b.frac = 0 end
  redis.call("HSET", key, "l", fmt(b.limit), "w", fmt(b.window), "t", fmt(b.tokens), "f", fmt(b.frac), "s", fmt(b.s), "n", fmt(b.n))
  -- A missing bucket behaves as a full one, so it may go once it would be
  -- full again (plus slack for clock skew between gateways).
  redis.call("PEXPIRE", key, fmt(math.ceil(resetWait / 1000000) + slack))
end

local op = ARGV[1]

if op == "peek" or op == "refund" then
  local key = KEYS[1]
  local b = load(key, tonumber(ARGV[6]), tonumber(ARGV[7]))
  refill(b)
  if op == "refund" then
    local n = tonumber(ARGV[8])
    if n >= b.limit - b.tokens then fill(b) else b.tokens = b.tokens + n end
    if redis.call("EXISTS", key) == 1 then save(key, b, wait(b, b.limit)) end
  end
  return {fmt(b.tokens), fmt(wait(b, b.limit))}
end

-- take
local work, byKey, idx = {}, {}, {}
local allowed, denied, impossible = true, -1, false
local ntakes = (#ARGV - 4) / 4
for i = 1, ntakes do
  local base = 4 + (i - 1) * 4
  local key = KEYS[tonumber(ARGV[base + 1])]
  local e = byKey[key]
  if not e then
    local b = load(key, tonumber(ARGV[base + 2]), tonumber(ARGV[base + 3]))
    refill(b)
    e = {key = key, orig = b, b = {limit = b.limit, window = b.window, tokens = b.tokens, frac = b.frac, s = b.s, n = b.n}, need = 0}
    byKey[key] = e
    work[#work + 1] = e
  end
  idx[i] = e
  local n = tonumber(ARGV[base + 4])
  e.need = e.need + n
  local ok = false
  if n > e.b.limit or e.need > e.b.limit then
    impossible = true
  elseif e.b.tokens >= n then
    e.b.tokens = e.b.tokens - n
    ok = true
  end
  if not ok and allowed then allowed, denied = false, i - 1 end
end

local out = {}
if not allowed then
  local retry = 0
  if not impossible then
    for _, e in ipairs(work) do
      local w = wait(e.orig, e.need)
      if w > retry then retry = w end
    end
  end
  out[1], out[2], out[3], out[4] = "0", tostring(denied), impossible and "1" or "0", fmt(retry)
  for i = 1, ntakes do
    local b = idx[i].orig
    out[#out + 1] = fmt(b.tokens)
    out[#out + 1] = fmt(wait(b, b.limit))
  end
  return out
end
for _, e in ipairs(work) do
  e.reset = wait(e.b, e.b.limit)
  save(e.key, e.b, e.reset)
end
out[1], out[2], out[3], out[4] = "1", "-1", "0", "0"
for i = 1, ntakes do
  out[#out + 1] = fmt(idx[i].b.tokens)
  out[#out + 1] = fmt(idx[i].reset)
end
return out
