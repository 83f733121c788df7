-- Token bucket, one rate (see token_bucket.lua): q * L + r, in us times L,
-- is when the bucket is full again.
local raw = redis.call('GET', KEYS[1])
local q, r = 0, 0
if raw and #raw == 16 then q, r = struct.unpack('<d<d', raw) end
-- How far below full now, in us times L.
local debt = 0
if q >= now then debt = (q - now) * L + r end
local allowed, never, retry, retry_adj = 1, 0, 0, 0
if cost > L then
  allowed, never = 0, 1
elseif cost > 0 and debt > (L - cost) * W then
  allowed = 0
  retry, retry_adj = ceil_ns(debt - (L - cost) * W, L)
end
local reset, reset_adj
if allowed == 1 and cost > 0 and record then
  local base_q, base_r = now, 0
  if debt > 0 then base_q, base_r = q, r end
  local dq
  dq, r = divmod(base_r + cost * W, L)
  q = base_q + dq
  debt = (q - now) * L + r
  reset, reset_adj = ceil_ns(debt, L)
  redis.call('SET', KEYS[1], struct.pack('<d<d', q, r), 'PX', ttl_ms(reset, reset_adj))
else
  reset, reset_adj = ceil_ns(debt, L)
end
local remaining = L - divmod(debt + W - 1, W)
if remaining < 0 then remaining = 0 end
local refill, refill_adj = 0, 0
if remaining < L and debt > (L - remaining - 1) * W then
  refill, refill_adj = ceil_ns(debt - (L - remaining - 1) * W, L)
end
return struct.pack(ANSWER, now, allowed, remaining, never, retry, retry_adj, reset, reset_adj, refill, refill_adj, 0, 0)
