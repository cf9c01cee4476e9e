'use strict';
module.exports = { bullmq: require('bullmq'), ioredis: require('ioredis') };
