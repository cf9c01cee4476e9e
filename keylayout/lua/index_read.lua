-- index_read: the live members of one index (keylayout/lua/, embedded by the
-- build; run by proxy/index.c with EVALSHA, one call per index of a listing).
--
-- KEYS  [1] the index (a sorted set: member = record, score = its expiry in
--       Unix ms, +inf for none)
-- ARGV  [1] a TYPE to filter by, or '' for every record
--       [2] [3] when filtering: the record's cluster name is
--       ARGV[2] .. encode(member) .. ARGV[3]
--
-- Entries whose score is at or below the server's now are expired records:
-- they are removed (pruned on read) before the rest are returned. With a
-- TYPE, a record the index names but this node cannot read because its slot
-- is being migrated answers TRYAGAIN (the proxy retries until the move ends).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
if ARGV[1] == nil or ARGV[1] == '' then
    return members
end

-- layout_encode: % : { } * ? [ ] \ blank, control bytes and 0x7F as %XX
local function encode(s)
    return (string.gsub(s, '[%%:{}%*%?%[%]\\%c ]', function(c)
        return string.format('%%%02X', string.byte(c))
    end))
end

local want = string.lower(ARGV[1])
local out = {}
for _, m in ipairs(members) do
    local r = redis.pcall('TYPE', ARGV[2] .. encode(m) .. ARGV[3])
    if type(r) == 'table' and r.err then
        return redis.error_reply('TRYAGAIN the index lists a record this node does not hold (slot being migrated)')
    end
    if r.ok == want then
        out[#out + 1] = m
    end
end
return out
