-- Fixed window, one rate (see fixed_window.lua).
local raw = redis.call('GET', KEYS[1])
local index, count, found = 0, 0, false
if raw and #raw == 16 then index, count = struct.unpack('<d<d', raw) found = true end
local t = now
local current = divmod(now, W)
-- A key already in this window keeps its expiry: the write that started the
-- window, at a time in it (Redis time does not go back), set it to the
-- window's end at least (ttl_ms below; 24 h in
-- explicit-time mode), and nothing in the window can need the key longer.
-- SET ... KEEPTTL costs Redis half a SET ... PX (BENCHMARKS.md).
local same = found and current == index
if current > index then
  index, count = current, 0
elseif current < index then
  t = index * W
end
-- Until the window ends: the wait of any denial, the reset, the refill.
local left = (index + 1) * W - t
if left < 0 then left = 0 end
local allowed, never, retry = 1, 0, 0
if cost > L then
  allowed, never = 0, 1
elseif cost > 0 and count + cost > L then
  allowed, retry = 0, left
end
-- A counted denial leaves the window full until it ends.
local counted = allowed == 0 and always and count < L
if counted then count = L end
if (allowed == 1 and cost > 0 and record) or counted then
  if allowed == 1 then count = count + cost end
  if same then
    redis.call('SET', KEYS[1], struct.pack('<d<d', index, count), 'KEEPTTL')
  else
    redis.call('SET', KEYS[1], struct.pack('<d<d', index, count), 'PX', ttl_ms(left, 0))
  end
end
local reset, refill = 0, 0
if count > 0 then reset, refill = left, left end
return struct.pack(ANSWER, t, allowed, L - count, never, retry, 0, reset, 0, refill, 0, 0, 0)
