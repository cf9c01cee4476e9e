/*
 * slot: Redis Cluster hash slots (cluster spec, "Keys distribution model").
 * Pure functions, no state.
 */
#ifndef TAGPROXY_SLOT_H
#define TAGPROXY_SLOT_H

#include <stddef.h>
#include <stdint.h>

#define SLOT_COUNT 16384

/* What a command's keys come to besides one slot: none (or arguments too
 * malformed to find them: the node says so), or several (CROSSSLOT). */
#define SLOT_NONE  (-1)
#define SLOT_CROSS (-2)

/* CRC16-CCITT (XMODEM): poly 0x1021, init 0. "123456789" -> 0x31C3. */
uint16_t slot_crc16(const char *buf, size_t len);

/* The slot of a key: CRC16 of the hash tag (the bytes between the first '{'
 * and the first '}' after it, when not empty) or of the whole key, mod 16384. */
int slot_of(const char *key, size_t len);

#endif
