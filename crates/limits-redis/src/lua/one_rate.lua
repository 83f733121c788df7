-- The prelude of the one-rate scripts: a rule of one rate (the common case)
-- is decided by straight-line code, without the general driver's tables,
-- loops and per-call closures, which cost more than the decision itself
-- (BENCHMARKS.md). Same ARGV and answer as driver.lua with n = 1; the same
-- arithmetic as the limiter's general functions, which stay the reference
-- for rules of several rates (the conformance suite runs both).
-- The answer: its 12 numbers packed as little-endian doubles in one string,
-- the first the time decided at (the state's later time, if a window or
-- the log holds one: what the request's receipt names).
local ANSWER = '<d<d<d<d<d<d<d<d<d<d<d<d'
-- ceil(x * 1000 / d) nanoseconds for x scaled by d, as (us, adj).
local function ceil_ns(x, d)
  local q, r = divmod(x, d)
  local a, b = divmod(r * 1000, d)
  if b > 0 then a = a + 1 end
  return q, a
end

-- The key's time to live in ms for a state back to full after (us, adj).
local function ttl_ms(us, adj)
  if adj > 0 then us = us + 1 end
  local ms, r = divmod(us, 1000)
  if r > 0 then ms = ms + 1 end
  ms = ms + 1
  local floor = tonumber(ARGV[4])
  if ms < floor then ms = floor end
  return ms
end

local cost = tonumber(ARGV[2])
local record = ARGV[3] ~= '0'
-- A denial recorded too (the counters: up to the limit).
local always = ARGV[3] == '2'
local L, W, B = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
