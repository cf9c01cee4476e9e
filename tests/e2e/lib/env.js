'use strict';
// Where the proxy is, and key names that cannot collide with anything else:
// every key a test creates starts with a prefix unique to this run and
// library, and is recorded so the suite can delete it at the end.

const crypto = require('node:crypto');
const { keyInRange, spreadKeys } = require('./slots');

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6380';

class KeyBook {
  constructor(lib) {
    const run = `${process.pid}-${Date.now().toString(36)}-${crypto.randomBytes(3).toString('hex')}`;
    this.prefix = `tpe2e:${lib}:${run}:`;
    this.keys = new Set();
  }

  // One key; the name is free-form (it may carry a {hash tag}).
  key(name) {
    const key = this.prefix + name;
    this.keys.add(key);
    return key;
  }

  // One key whose slot lies in master range r (0, 1 or 2).
  keyIn(name, r) {
    const key = keyInRange(this.prefix + name, r);
    this.keys.add(key);
    return key;
  }

  // perRange keys on each master, interleaved (see slots.spreadKeys).
  spread(name, perRange) {
    const keys = spreadKeys(this.prefix + name, perRange);
    for (const k of keys) this.keys.add(k);
    return keys;
  }

  all() {
    return [...this.keys];
  }
}

module.exports = { REDIS_URL, KeyBook };
