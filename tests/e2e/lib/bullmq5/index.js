'use strict';
module.exports = { bullmq: require('bullmq') };
