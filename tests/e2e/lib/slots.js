'use strict';
// Hash slots as Redis Cluster computes them: CRC16-CCITT (XMODEM: polynomial
// 0x1021, initial value 0, no reflection) of the key, or of its hash tag,
// modulo 16384. Used to pick key names that land on each of the three masters
// of a default 3-master cluster, so multi-key commands really cross nodes.

const TABLE = new Uint16Array(256);
for (let i = 0; i < 256; i++) {
  let crc = i << 8;
  for (let bit = 0; bit < 8; bit++) {
    crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  TABLE[i] = crc;
}

function crc16(input) {
  const buf = Buffer.isBuffer(input) ? input : Buffer.from(input);
  let crc = 0;
  for (const byte of buf) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff];
  return crc;
}

// The hash tag is what lies between the first '{' and the first '}' after it,
// when that is not empty; otherwise the whole key is hashed.
function keySlot(key) {
  const buf = Buffer.isBuffer(key) ? key : Buffer.from(key);
  const open = buf.indexOf('{');
  if (open !== -1) {
    const close = buf.indexOf('}', open + 1);
    if (close > open + 1) return crc16(buf.subarray(open + 1, close)) % 16384;
  }
  return crc16(buf) % 16384;
}

// The slot ranges redis-cli --cluster create gives three masters.
const MASTER_RANGES = [
  [0, 5460],
  [5461, 10922],
  [10923, 16383],
];

function rangeOf(slot) {
  return MASTER_RANGES.findIndex(([lo, hi]) => slot >= lo && slot <= hi);
}

// The first key `${base}:${n}` (n = 0, 1, ...) whose slot is in range `r`
// and not already in `taken` (a Set of keys).
function keyInRange(base, r, taken = new Set()) {
  for (let n = 0; ; n++) {
    const key = `${base}:${n}`;
    if (!taken.has(key) && rangeOf(keySlot(key)) === r) return key;
  }
}

// `perRange` keys in each of the three ranges, interleaved so that
// consecutive arguments go to different masters:
// [r0, r1, r2, r0, r2, r1, ...] (every other round reversed).
function spreadKeys(base, perRange) {
  const taken = new Set();
  const keys = [];
  for (let round = 0; round < perRange; round++) {
    const order = round % 2 === 0 ? [0, 1, 2] : [0, 2, 1];
    for (const r of order) {
      const key = keyInRange(base, r, taken);
      taken.add(key);
      keys.push(key);
    }
  }
  return keys;
}

module.exports = { crc16, keySlot, MASTER_RANGES, rangeOf, keyInRange, spreadKeys };
