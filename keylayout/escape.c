/*
 * escape: the percent-encoding of captured values. See escape.h.
 */
#include "keylayout/escape.h"

#include "keylayout/rules.h"

static const char HEX[] = "0123456789ABCDEF";

/* Runs of bytes kept as they are go out in one piece: this is on the path of
 * every key. */
void escape_put(struct out *o, const char *s, size_t len)
{
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!rules_must_encode(c))
            continue;
        out_put(o, s + run, i - run);
        char esc[3] = { '%', HEX[c >> 4], HEX[c & 15] };
        out_put(o, esc, 3);
        run = i + 1;
    }
    out_put(o, s + run, len - run);
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;   /* lower case is not what escape_encode makes */
}

int escape_byte_at(const char *s, size_t len, size_t i)
{
    if (len - i < 3)
        return -1;
    int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0 || !rules_must_encode((unsigned char)(hi << 4 | lo)))
        return -1;
    return hi << 4 | lo;
}

int escape_take(struct out *o, const char *s, size_t len)
{
    size_t run = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!rules_must_encode(c))
            continue;
        int b = c == '%' ? escape_byte_at(s, len, i) : -1;
        if (b < 0)
            return -1;
        if (o) {
            out_put(o, s + run, i - run);
            out_byte(o, (char)b);
        }
        i += 2;
        run = i + 1;
    }
    if (o)
        out_put(o, s + run, len - run);
    return 0;
}

size_t escape_encode(const char *in, size_t len, char *out, size_t cap)
{
    struct out o = { out, cap, 0, NULL, 0, false };
    escape_put(&o, in, len);
    return o.len;
}

int escape_decode(const char *in, size_t len, char *out, size_t cap, size_t *outlen)
{
    struct out o = { out, cap, 0, NULL, 0, false };
    if (escape_take(&o, in, len) < 0)
        return -1;
    *outlen = o.len;
    return 0;
}
