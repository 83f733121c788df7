-- A request's decisions in one script call (after DECIDE: every limiter's
-- script as a function of its KEYS and ARGV, by its SHA1).
-- All or nothing ('all-or-nothing'): each decision first only looks at the state the request found (a peek);
-- if every one admits, each then decides and records in turn, as it would
-- alone; if any is denied, the admitted ones record nothing and answer what
-- they looked at, and a denied one records only what its own mode records
-- of a denial (2: a counted denial). One script is one atomic step of
-- Redis: no other call sees or changes the keys between the two passes.
-- Or ('until-denied', 'until-failed') one after the other, each deciding
-- and recording in turn as it would alone, up to the first that fails (its
-- error is its answer, and those before it keep what they recorded, as
-- they would alone) or, 'until-denied', the first denied: the ones after
-- it are not decided.
-- ARGV: 'all-or-nothing', 'until-denied' or 'until-failed', n, then per
-- decision: its script's SHA1, its key count, its argument count, and its
-- arguments as its script takes them; KEYS: every decision's keys in turn.
-- Returns each decision's answer as its script packs it (now, then
-- allowed, as the first two doubles): all n, or in order those decided.
local how, n = ARGV[1], tonumber(ARGV[2])
local calls = {}
local a, k = 3, 1
local now
for i = 1, n do
  local decide, keys, args = DECIDE[ARGV[a]], {}, {}
  local key_count, arg_count = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  a = a + 3
  for j = 1, key_count do keys[j] = KEYS[k + j - 1] end
  for j = 1, arg_count do args[j] = ARGV[a + j - 1] end
  k, a = k + key_count, a + arg_count
  -- One time for the whole request, so that each decision records at the
  -- time it looked at: Redis's TIME once, unless the caller gave one.
  if args[1] == '' then
    if not now then
      local t = redis.call('TIME')
      now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    end
    args[1] = string.format('%.0f', now)
  end
  calls[i] = {decide = decide, keys = keys, args = args}
end

local function admitted(answer)
  local _, allowed = struct.unpack('<d<d', answer)
  return allowed == 1
end

if how ~= 'all-or-nothing' then
  local out = {}
  for i = 1, n do
    local c = calls[i]
    local ok, answer = pcall(c.decide, c.keys, c.args)
    if not ok then
      -- Its error as the text of Redis's error reply, in a table of its
      -- own (an error reply among answers would fail the whole call for a
      -- client); redis.call raises Redis's error as a table, Lua its own as
      -- text.
      out[i] = {type(answer) == 'table' and answer.err or tostring(answer)}
      return out
    end
    out[i] = answer
    if how == 'until-denied' and not admitted(answer) then return out end
  end
  return out
end

local looked, all = {}, true
for i = 1, n do
  local c = calls[i]
  local mode = c.args[3]
  c.args[3] = '0'
  looked[i] = c.decide(c.keys, c.args)
  c.args[3] = mode
  if not admitted(looked[i]) then all = false end
end

local out = {}
for i = 1, n do
  local c = calls[i]
  -- Mode::decides_after_looks: all, or a denial its mode counts.
  if all or (c.args[3] == '2' and not admitted(looked[i])) then
    out[i] = c.decide(c.keys, c.args)
  else
    out[i] = looked[i]
  end
end
return out
