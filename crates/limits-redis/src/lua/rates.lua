-- The rule's rates, after the first four arguments (now, cost, mode, the
-- ttl floor in ms): n, then n x (L, W in us, burst). Read by the driver
-- and the settle driver alike.
local floor = tonumber(ARGV[4])
local n = tonumber(ARGV[5])
local P = {}
for i = 1, n do
  local b = 5 + (i - 1) * 3
  P[i] = {L = tonumber(ARGV[b + 1]), W = tonumber(ARGV[b + 2]), B = tonumber(ARGV[b + 3])}
end
