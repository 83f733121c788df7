-- Now, in microseconds: Redis's own TIME, or the explicit time a caller
-- passed in ARGV[1] (deterministic tests, replay).
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[1])
end
