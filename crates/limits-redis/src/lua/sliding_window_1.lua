-- Sliding window counter, one rate (see sliding_window.lua).
local raw = redis.call('GET', KEYS[1])
local index, prev, curr, found = 0, 0, 0, false
if raw and #raw == 24 then index, prev, curr = struct.unpack('<d<d<d', raw) found = true end
local t = now
local current = divmod(now, W)
-- A key already in this window keeps its expiry, as in fixed_window_1.lua:
-- the write that started the window set it to the next window's end at
-- least (the reset below, from a time in this window; 24 h in explicit-time
-- mode), and nothing in this window can need the key longer.
local same = found and current == index
if current == index + 1 then
  index, prev, curr = current, curr, 0
elseif current > index then
  index, prev, curr = current, 0, 0
elseif current < index then
  t = index * W
end
local start = index * W

-- The smallest elapsed time (us, adj) in a window of counts (p, c) at which
-- p * (W - e) + (c + k) * W <= L * W; nil if none.
local function first_fit(p, c, k)
  local room = L - c - k
  if room < 0 then return nil end
  if p == 0 then return 0, 0 end
  local q, rem = divmod(room * W, p)
  if q >= W then return 0, 0 end
  local f = divmod(rem * 1000, p)
  if q == 0 and f == 0 then return nil end
  return W - q, -f
end

-- The wait (us, adj) before k more pass, or nil if they pass now (k <= L).
local function wait(k)
  local room = L - curr - k
  if room >= 0 and prev * (W - (t - start)) <= room * W then return nil end
  local e, adj = first_fit(prev, curr, k)
  if e then return start + e - t, adj end
  e, adj = first_fit(curr, 0, k)
  if not e then e, adj = W, 0 end
  return start + W + e - t, adj
end

local allowed, never, retry, retry_adj = 1, 0, 0, 0
if cost > L then
  allowed, never = 0, 1
elseif cost > 0 then
  local w, adj = wait(cost)
  if w then allowed, retry, retry_adj = 0, w, adj end
end
-- A counted denial adds its cost up to the limit; its wait is then the
-- same request's after what it added.
local counted = allowed == 0 and always and curr < L
if counted then
  if never == 1 then
    curr = L
  else
    curr = math.min(curr + cost, L)
    retry, retry_adj = wait(cost)
  end
end
local reset = 0
if (allowed == 1 and cost > 0 and record) or counted then
  if allowed == 1 then curr = curr + cost end
  reset = start + 2 * W - t
  if reset < 0 then reset = 0 end
  if same then
    redis.call('SET', KEYS[1], struct.pack('<d<d<d', index, prev, curr), 'KEEPTTL')
  else
    redis.call('SET', KEYS[1], struct.pack('<d<d<d', index, prev, curr), 'PX', ttl_ms(reset, 0))
  end
elseif curr > 0 then
  reset = start + 2 * W - t
elseif prev > 0 then
  reset = start + W - t
end
if reset < 0 then reset = 0 end
local remaining = 0
local room = L * W - (prev * (W - (t - start)) + curr * W)
if room > 0 then remaining = divmod(room, W) end
local refill, refill_adj = 0, 0
if remaining < L then
  local w, adj = wait(remaining + 1)
  if w then refill, refill_adj = w, adj end
end
return struct.pack(ANSWER, t, allowed, remaining, never, retry, retry_adj, reset, 0, refill, refill_adj, 0, 0)
