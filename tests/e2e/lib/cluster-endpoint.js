'use strict';
// Is REDIS_URL a cluster endpoint? CLUSTER INFO over a raw socket (no client
// library in between): null when it answers cluster_state, else the error or
// reply, as the reason to skip (a plain redis-server says "ERR This instance
// has cluster support disabled"). For the cluster-mode tests.

const net = require('node:net');

function clusterInfoError(host, port, label) {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    let buf = '';
    const done = (why) => {
      sock.destroy();
      resolve(why);
    };
    sock.setTimeout(5000, () => done('CLUSTER INFO timed out'));
    sock.on('error', (e) => done(`cannot connect to ${label}: ${e.message}`));
    sock.on('data', (d) => {
      buf += d.toString('latin1');
      if (buf.startsWith('-') && buf.includes('\r\n')) {
        done(`CLUSTER INFO answered ${buf.trim()}`);
      } else if (buf.includes('cluster_state:')) {
        done(null);
      } else if (buf.length > 4096) {
        done(`unexpected CLUSTER INFO reply ${JSON.stringify(buf.slice(0, 80))}`);
      }
    });
    sock.write('*2\r\n$7\r\nCLUSTER\r\n$4\r\nINFO\r\n');
  });
}

module.exports = { clusterInfoError };
