-- Leaky bucket, one rate (see leaky_bucket.lua): q * L + r, in us times L,
-- is the next unit's departure slot; the capacity is B + 1.
local raw = redis.call('GET', KEYS[1])
local q, r = 0, 0
if raw and #raw == 16 then q, r = struct.unpack('<d<d', raw) end
-- How long the queue is now, in us times L.
local queued = 0
if q >= now then queued = (q - now) * L + r end
local most = B * W
local allowed, never, retry, retry_adj, delay, delay_adj = 1, 0, 0, 0, 0, 0
if cost > B + 1 then
  allowed, never = 0, 1
elseif cost > 0 then
  -- When a request of this cost would depart, after now (us times L).
  local departs = queued + (cost - 1) * W
  if departs > most then
    allowed = 0
    retry, retry_adj = ceil_ns(departs - most, L)
  else
    delay, delay_adj = ceil_ns(departs, L)
    if record then
      local dq
      dq, r = divmod(departs + W, L)
      q = now + dq
      queued = dq * L + r
    end
  end
end
local reset, reset_adj = ceil_ns(queued, L)
if allowed == 1 and cost > 0 and record then
  redis.call('SET', KEYS[1], struct.pack('<d<d', q, r), 'PX', ttl_ms(reset, reset_adj))
end
local slots = divmod(queued + W - 1, W)
local remaining = B + 1 - slots
if remaining < 0 then remaining = 0 end
local refill, refill_adj = 0, 0
if remaining < B + 1 then
  -- A request of remaining + 1 (at least 1) departs after `most`.
  local departs = queued + remaining * W
  if departs > most then refill, refill_adj = ceil_ns(departs - most, L) end
end
return struct.pack(ANSWER, now, allowed, remaining, never, retry, retry_adj, reset, reset_adj, refill, refill_adj, delay, delay_adj)
