-- index_read: the live members of one index (keylayout/lua/, embedded by the
-- build; run by proxy/families/index.c with EVALSHA, one call per index of a listing).
--
-- KEYS  [1] the index (a sorted set: member = record, score = its expiry in
--       Unix ms, +inf for none)
-- ARGV  [1] a TYPE to filter by, or '' for every record
--       [2] [3] [4] when filtering: the record's cluster name is
--       ARGV[2] .. the member's parts, each encoded, joined by ':' .. ARGV[3],
--       the parts being its first ARGV[4] ':'-separated pieces and the rest
--       (0 for a bucket family: the whole member; 1 for user data: ns, key)
--
-- Entries whose score is at or below the server's now are expired records:
-- the rest are returned, and the expired ones removed (pruned on read). The
-- removal comes last: it may delete the index, which a node migrating this
-- slot would then refuse to let the script name again.
--
-- With a TYPE, a live entry whose record this node cannot read, or does not
-- hold, is a record whose slot is being migrated (the index moved before or
-- after it): the answer is TRYAGAIN, which the proxy retries until the move
-- ends, rather than a listing that misses the record.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local members = redis.call('ZRANGE', KEYS[1], '(' .. now, '+inf', 'BYSCORE')
local out = members
if ARGV[1] ~= nil and ARGV[1] ~= '' then
    -- layout_encode: % : { } * ? [ ] \ blank, control bytes and 0x7F as %XX
    local function encode(s)
        return (string.gsub(s, '[%%:{}%*%?%[%]\\%c ]', function(c)
            return string.format('%%%02X', string.byte(c))
        end))
    end
    local splits = tonumber(ARGV[4]) or 0
    local function record(m)
        local parts, rest = {}, m
        for _ = 1, splits do
            local at = string.find(rest, ':', 1, true)
            if not at then
                return nil
            end
            parts[#parts + 1] = encode(string.sub(rest, 1, at - 1))
            rest = string.sub(rest, at + 1)
        end
        parts[#parts + 1] = encode(rest)
        return ARGV[2] .. table.concat(parts, ':') .. ARGV[3]
    end
    local want = string.lower(ARGV[1])
    out = {}
    for _, m in ipairs(members) do
        local key = record(m)
        -- a member of no record's shape is no record: the proxy drops it too
        local r = key and redis.pcall('TYPE', key) or { ok = 'none-of-ours' }
        if key and (type(r) ~= 'table' or r.err or r.ok == 'none') then
            return redis.error_reply('TRYAGAIN an indexed record is not on this node (slot being migrated)')
        end
        if r.ok == want then
            out[#out + 1] = m
        end
    end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return out
