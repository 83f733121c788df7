-- The decision over every rate of the rule, all or nothing, as the core's
-- decide_rates: check every rate; if all admit, every rate records.
-- ARGV: now (us, or '' for Redis TIME), cost, record (1), peek (0) or
-- record a denial too (2: A.record_denied, where the limiter has one),
-- the ttl floor in ms, the number of rates n, then n x (L, W in us, burst).
-- Returns the time decided at (now, or a state's later time: what the
-- request's receipt names), then per rate: allowed, remaining, never, retry
-- us, retry adj, reset us, reset adj, refill us, refill adj, delay us, delay
-- adj; packed as
-- little-endian doubles (exact integers) in one string, which costs Redis
-- half what an array of integers does (BENCHMARKS.md).
local cost = tonumber(ARGV[2])
local record = ARGV[3] ~= '0'
local always = ARGV[3] == '2'

local S = A.load(P, n)
local T = {}
local at = now
for i = 1, n do
  T[i] = A.advance(P[i], S[i], now, i)
  if T[i] > at then at = T[i] end
end
local allowed = true
if cost > 0 then
  for i = 1, n do
    if A.check(P[i], S[i], T[i], cost, i) ~= nil then
      allowed = false
      break
    end
  end
end

local out = {at}
local resets = {}
local recorded = false
for i = 1, n do
  local p, s, t = P[i], S[i], T[i]
  local retry, delay = ZERO, ZERO
  local never = 0
  if allowed then
    if cost > 0 then
      delay = A.delay(p, s, t, cost)
      if record then
        A.record(p, s, t, cost, i)
        recorded = true
      end
    end
  else
    local w = A.check(p, s, t, cost, i)
    if always and cost > 0 and A.record_denied then
      A.record_denied(p, s, t, cost, i)
      recorded = true
      -- The wait is the same request's after what it added.
      if w ~= NEVER then
        local after = A.check(p, s, t, cost, i)
        if type(after) == 'table' then w = after end
      end
    end
    if w == NEVER then never = 1 elseif w ~= nil then retry = w end
  end
  local remaining = A.remaining(p, s, t)
  local reset = A.reset(p, s, t)
  local refill = ZERO
  if remaining < A.capacity(p) then
    local w = A.check(p, s, t, remaining + 1, i)
    if type(w) == 'table' then refill = w end
  end
  resets[i] = reset
  local o = #out
  out[o + 1], out[o + 2], out[o + 3] = allowed and 1 or 0, remaining, never
  out[o + 4], out[o + 5], out[o + 6], out[o + 7] = retry[1], retry[2], reset[1], reset[2]
  out[o + 8], out[o + 9], out[o + 10], out[o + 11] = refill[1], refill[2], delay[1], delay[2]
end
if recorded then A.save(P, S, resets, floor) end
return struct.pack(string.rep('<d', #out), unpack(out))
