#include "cluster/slot.h"

#include <string.h>

/* Table-driven CRC16 (XMODEM), four bytes a step ("slicing by 4"): with
 * one table, each byte's lookup waits for the previous one; here the four
 * lookups of a step are independent. crc16_table[k][x] is the CRC of byte x
 * followed by k zero bytes. Because the register is two bytes wide, it
 * folds into the step's first two bytes. The tables are filled before
 * main() runs, so worker threads only ever read them. */
static uint16_t crc16_table[4][256];

__attribute__((constructor)) static void crc16_table_fill(void)
{
    for (int byte = 0; byte < 256; byte++) {
        uint16_t crc = (uint16_t)(byte << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
        crc16_table[0][byte] = crc;
    }
    for (int k = 1; k < 4; k++)
        for (int byte = 0; byte < 256; byte++) {
            uint16_t prev = crc16_table[k - 1][byte];   /* then one zero byte more */
            crc16_table[k][byte] = (uint16_t)((prev << 8) ^ crc16_table[0][prev >> 8]);
        }
}

uint16_t slot_crc16(const char *buf, size_t len)
{
    const unsigned char *p = (const unsigned char *)buf;
    uint16_t crc = 0;
    for (; len >= 4; p += 4, len -= 4)
        crc = (uint16_t)(crc16_table[3][p[0] ^ (crc >> 8)] ^ crc16_table[2][p[1] ^ (crc & 0xff)] ^
                         crc16_table[1][p[2]] ^ crc16_table[0][p[3]]);
    for (; len > 0; p++, len--)
        crc = (uint16_t)((crc << 8) ^ crc16_table[0][(crc >> 8) ^ *p]);
    return crc;
}

int slot_of(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t rest = len - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1)
            return slot_crc16(open + 1, (size_t)(close - open - 1)) & (SLOT_COUNT - 1);
    }
    return slot_crc16(key, len) & (SLOT_COUNT - 1);
}
