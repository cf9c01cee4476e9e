#include "keylayout/glob.h"

/* One bracket set at p[0..plen) (after the '['), against byte c. Moves
 * *p / *plen to the closing ']' (or the last byte when unclosed), as Redis
 * leaves them, and returns whether c is in the set (before '^'). */
static bool set_match(const char **pp, long *plenp, char c)
{
    const char *p = *pp;
    long plen = *plenp;
    bool match = false;
    for (;;) {
        if (plen >= 2 && p[0] == '\\') {
            p++;
            plen--;
            if (p[0] == c)
                match = true;
        } else if (plen == 0) {
            /* (Redis reads the NUL after its pattern here: never ']') */
            p--;
            plen++;
            break;
        } else if (p[0] == ']') {
            break;
        } else if (plen >= 3 && p[1] == '-') {
            int start = p[0], end = p[2], ch = c;
            if (start > end) {
                int t = start;
                start = end;
                end = t;
            }
            p += 2;
            plen -= 2;
            if (ch >= start && ch <= end)
                match = true;
        } else if (p[0] == c) {
            match = true;
        }
        p++;
        plen--;
    }
    *pp = p;
    *plenp = plen;
    return match;
}

/* redis-server 7.0 util.c stringmatchlen_impl, nocase 0. Lengths are long,
 * as Redis's int, so that the (-1) steps it takes at an unclosed set work. */
static bool match_impl(const char *p, long plen, const char *s, long slen,
                       bool *skip_longer, int nesting)
{
    if (nesting > 1000)
        return false;
    while (plen && slen) {
        switch (p[0]) {
        case '*':
            while (plen > 1 && p[1] == '*') {
                p++;
                plen--;
            }
            if (plen == 1)
                return true;
            while (slen) {
                if (match_impl(p + 1, plen - 1, s, slen, skip_longer, nesting + 1))
                    return true;
                if (*skip_longer)
                    return false;
                s++;
                slen--;
            }
            /* the rest matches nowhere: an earlier '*' taking more cannot help */
            *skip_longer = true;
            return false;
        case '?':
            s++;
            slen--;
            break;
        case '[': {
            p++;
            plen--;
            bool not = p[0] == '^' && plen > 0;
            if (not) {
                p++;
                plen--;
            }
            bool match = set_match(&p, &plen, s[0]);
            if (not)
                match = !match;
            if (!match)
                return false;
            s++;
            slen--;
            break;
        }
        case '\\':
            if (plen >= 2) {
                p++;
                plen--;
            }
            /* fall through */
        default:
            if (p[0] != s[0])
                return false;
            s++;
            slen--;
            break;
        }
        p++;
        plen--;
        if (slen == 0) {
            while (plen > 0 && *p == '*') {
                p++;
                plen--;
            }
            break;
        }
    }
    return plen == 0 && slen == 0;
}

bool glob_match(const char *pattern, size_t plen, const char *s, size_t slen)
{
    bool skip_longer = false;
    return match_impl(pattern, (long)plen, s, (long)slen, &skip_longer, 0);
}

size_t glob_literal_prefix(const char *pattern, size_t plen, char *out, size_t cap,
                           bool *exact)
{
    size_t n = 0, i = 0;
    *exact = false;
    for (; i < plen; i++) {
        char c = pattern[i];
        if (c == '*' || c == '?' || c == '[')
            break;
        if (c == '\\' && i + 1 < plen)
            c = pattern[++i];
        if (n < cap)
            out[n] = c;
        n++;
    }
    *exact = i == plen;
    return n;
}
