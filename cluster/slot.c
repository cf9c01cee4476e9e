#include "cluster/slot.h"

#include <string.h>

/* Table-driven CRC16 (XMODEM). The table is filled before main() runs, so
 * worker threads only ever read it. */
static uint16_t crc16_table[256];

__attribute__((constructor)) static void crc16_table_fill(void)
{
    for (int byte = 0; byte < 256; byte++) {
        uint16_t crc = (uint16_t)(byte << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
        crc16_table[byte] = crc;
    }
}

uint16_t slot_crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++)
        crc = (uint16_t)((crc << 8) ^ crc16_table[((crc >> 8) ^ (unsigned char)buf[i]) & 0xff]);
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
