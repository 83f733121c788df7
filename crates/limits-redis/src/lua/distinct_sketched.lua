-- A limit on distinct values with sketches past a threshold (after
-- now.lua), as the core's Distinct::with_sketch: a key holding ARGV[7]
-- (`from`) values that is asked for a new one turns them into
-- HyperLogLogs, one per sub-window (the window cut into ARGV[8], k),
-- merged when read (PFCOUNT); beside them the last `from` values, whose
-- repeats are free. Any other value passes only while the count has room
-- for one more.
-- KEYS[1]: the last values (a sorted set: value -> last use, us);
-- KEYS[2]: a hash of the sketches' sub-windows (slot -> sub-window
-- number); KEYS[3..k+2]: the sketch of each slot, sub-window number
-- modulo k. ARGV as distinct.lua's, then `from` and k. Answers as it.

local recent, slots = KEYS[1], KEYS[2]
local value = ARGV[2]
local at_most, window = tonumber(ARGV[3]), tonumber(ARGV[4])
local record = ARGV[5] ~= '0'
local floor = tonumber(ARGV[6])
local from, k = tonumber(ARGV[7]), tonumber(ARGV[8])
local sub = window / k
local current = math.floor(now / sub)

local function sketch(index) return KEYS[3 + index % k] end

local function expire(key, us)
  local ttl = math.floor((us + 999) / 1000) + 1
  if ttl < floor then ttl = floor end
  redis.call('PEXPIRE', key, ttl)
end

redis.call('ZREMRANGEBYSCORE', recent, '-inf', now - window)
-- The sub-windows still in the window; a slot's older sketch is dropped.
local live = {}
local numbers = redis.call('HGETALL', slots)
for i = 1, #numbers, 2 do
  local index = tonumber(numbers[i + 1])
  if index + k <= current then
    redis.call('DEL', sketch(index))
    redis.call('HDEL', slots, numbers[i])
  else
    live[index] = true
  end
end
-- `v` into the sketch of sub-window `index`, which lives until it leaves
-- the window.
local function add(index, v)
  redis.call('PFADD', sketch(index), v)
  expire(sketch(index), (index + k) * sub - now)
  redis.call('HSET', slots, index % k, index)
  live[index] = true
end

local held = redis.call('ZSCORE', recent, value)
local n = redis.call('ZCARD', recent)
if next(live) == nil and record and not held and n >= from then
  local values = redis.call('ZRANGE', recent, 0, -1, 'WITHSCORES')
  for i = 1, #values, 2 do
    local index = math.floor(tonumber(values[i + 1]) / sub)
    if index + k > current then add(index, values[i]) end
  end
end

local allowed, counted, oldest, newest
if next(live) == nil then
  -- Exact, as distinct.lua decides.
  allowed = held or n < at_most
  if allowed and record then
    redis.call('ZADD', recent, now, value)
    if not held then n = n + 1 end
  end
  counted = n
  local first = redis.call('ZRANGE', recent, 0, 0, 'WITHSCORES')
  local last = redis.call('ZRANGE', recent, -1, -1, 'WITHSCORES')
  oldest = first[2] and tonumber(first[2]) + window - now or 0
  newest = last[2] and tonumber(last[2]) + window - now or 0
else
  local keys = {}
  for index in pairs(live) do keys[#keys + 1] = sketch(index) end
  local count = redis.call('PFCOUNT', unpack(keys))
  allowed = held or count + 1 <= at_most
  local added = 0
  if allowed and record then
    redis.call('ZADD', recent, now, value)
    if not held then
      added = 1
      n = n + 1
    end
    if n > from then redis.call('ZREMRANGEBYRANK', recent, 0, n - from - 1) end
    add(current, value)
  end
  counted = count + added
  local low, high
  for index in pairs(live) do
    if not low or index < low then low = index end
    if not high or index > high then high = index end
  end
  oldest = (low + k) * sub - now
  newest = (high + k) * sub - now
end
if allowed and record then
  local last = redis.call('ZRANGE', recent, -1, -1, 'WITHSCORES')
  expire(recent, tonumber(last[2]) + window - now)
  if next(live) ~= nil then expire(slots, newest) end
end
local remaining = at_most - counted
if remaining < 0 then remaining = 0 end
return {allowed and 1 or 0, remaining, oldest, newest}
