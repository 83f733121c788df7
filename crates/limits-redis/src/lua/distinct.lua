-- A limit on distinct values for one key (after now.lua): at most
-- ARGV[3] values in any window of ARGV[4] microseconds. KEYS[1] is a
-- sorted set of the values the key holds, each scored by its last use;
-- ARGV[2] is the request's value, ARGV[5] the mode (0: peek, else record),
-- ARGV[6] the key's least time to live in ms (explicit times).
-- As the core's Distinct::decide: values that left the window (last use
-- + window <= now) are forgotten; a value held passes and is refreshed, a
-- new one passes while fewer than the limit are held, and is refused
-- otherwise, until the value used longest ago leaves the window.
-- Answers {allowed, remaining, until the oldest leaves, until the newest
-- leaves} (microseconds).

local key, value = KEYS[1], ARGV[2]
local at_most, window = tonumber(ARGV[3]), tonumber(ARGV[4])
local record = ARGV[5] ~= '0'
local floor = tonumber(ARGV[6])

-- A key's time never goes back: a caller's clock behind the last use is
-- read as the last use, as the core's Seen::advance does.
local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
if newest[2] and tonumber(newest[2]) > now then now = tonumber(newest[2]) end
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)

local held = redis.call('ZSCORE', key, value)
local count = redis.call('ZCARD', key)
local allowed = 1
if not held and count >= at_most then
  allowed = 0
elseif record then
  redis.call('ZADD', key, now, value)
  if not held then count = count + 1 end
end

local function leaves(range)
  if not range[2] then return 0 end
  return tonumber(range[2]) + window - now
end
local oldest = leaves(redis.call('ZRANGE', key, 0, 0, 'WITHSCORES'))
local last = leaves(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES'))
if allowed == 1 and record then
  local ttl = math.floor((last + 999) / 1000) + 1
  if ttl < floor then ttl = floor end
  redis.call('PEXPIRE', key, ttl)
end
return {allowed, at_most - count, oldest, last}
