// Node's own HTTP/2 client (the one gRPC-js and fetch libraries use) on
// one connection: h2node.js HOST PATH... Each PATH is one stream, sent one
// after the other; "POST:N:PATH" sends a body of N bytes. Prints one line
// per stream: "PATH STATUS BYTES [trailer=VALUE]", then "alpn=PROTOCOL",
// or "error CODE" for a stream or connection that failed.
'use strict';
const http2 = require('http2');

const host = process.argv[2];
const paths = process.argv.slice(3);
const session = http2.connect('https://' + host);
session.on('error', (e) => {
	console.log('error ' + (e.code || e.message));
	process.exit(1);
});

function one(spec) {
	return new Promise((resolve) => {
		const m = /^POST:(\d+):(.*)$/.exec(spec);
		const path = m ? m[2] : spec;
		const req = session.request({ ':method': m ? 'POST' : 'GET', ':path': path });
		let status = 0, bytes = 0, trailer = '';
		req.on('response', (h) => { status = h[':status']; });
		req.on('trailers', (t) => { trailer = ' trailer=' + (t['grpc-status'] || '-'); });
		req.on('data', (d) => { bytes += d.length; });
		req.on('end', () => resolve(path + ' ' + status + ' ' + bytes + trailer));
		req.on('error', (e) => resolve(path + ' error ' + (e.code || e.message)));
		req.end(m ? Buffer.alloc(Number(m[1]), 'n') : undefined);
	});
}

(async () => {
	for (const p of paths)
		console.log(await one(p));
	console.log('alpn=' + session.alpnProtocol);
	session.close();
})();
