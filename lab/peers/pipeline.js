// A streaming static file server for Node.js, written the careful way:
// every body goes through stream.pipeline(), which respects backpressure
// and destroys every stream (closing the file) when a client goes away.
// It is the Node.js peer of `largo bench` (`--peer node`).
//
//   node pipeline.js DIR PORT
//
// GET and HEAD with single ranges; text files compressed on the fly with
// gzip (level 1) or brotli (quality 1) when the client asks; PUT streamed
// into a temporary file, then renamed. Only 127.0.0.1 is served.
'use strict';

const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { pipeline } = require('node:stream');

const [dir, port] = process.argv.slice(2);
if (!dir || !port) {
  console.error('usage: node pipeline.js DIR PORT');
  process.exit(2);
}
const root = path.resolve(dir);

const textTypes = {
  '.log': 'text/plain; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.csv': 'text/csv; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
};

// resolve maps a request path to a file under root, or null.
function resolve(url) {
  let name;
  try {
    name = decodeURIComponent(url.split('?')[0]);
  } catch {
    return null;
  }
  const file = path.join(root, path.normalize(name));
  if (!file.startsWith(root + path.sep) || path.basename(file).startsWith('.')) {
    return null;
  }
  return file;
}

function fail(res, code, message) {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(code, { 'Content-Type': 'text/plain; charset=utf-8' });
  res.end(message + '\n');
}

// encoderFor picks a compressor for a text file the client accepts.
function encoderFor(accept) {
  if (/\bbr\b/.test(accept)) {
    const params = { [zlib.constants.BROTLI_PARAM_QUALITY]: 1 };
    return ['br', zlib.createBrotliCompress({ params })];
  }
  if (/\bgzip\b/.test(accept)) {
    return ['gzip', zlib.createGzip({ level: 1 })];
  }
  return [null, null];
}

function get(req, res, file) {
  fs.stat(file, (err, st) => {
    if (err || !st.isFile()) {
      fail(res, 404, 'not found');
      return;
    }
    const type = textTypes[path.extname(file)];
    const headers = {
      'Content-Type': type || 'application/octet-stream',
      'Accept-Ranges': 'bytes',
      'Last-Modified': st.mtime.toUTCString(),
    };
    let start = 0;
    let end = st.size - 1;
    let status = 200;
    const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range || '');
    if (range && (range[1] || range[2])) {
      if (range[1]) {
        start = Number(range[1]);
        if (range[2]) end = Math.min(Number(range[2]), end);
      } else {
        start = Math.max(0, st.size - Number(range[2]));
      }
      if (start > end) {
        res.writeHead(416, { 'Content-Range': `bytes */${st.size}` });
        res.end();
        return;
      }
      status = 206;
      headers['Content-Range'] = `bytes ${start}-${end}/${st.size}`;
    }
    let encoding = null;
    let encoder = null;
    if (type && status === 200) {
      headers['Vary'] = 'Accept-Encoding';
      [encoding, encoder] = encoderFor(req.headers['accept-encoding'] || '');
    }
    if (encoding) {
      headers['Content-Encoding'] = encoding;
    } else {
      headers['Content-Length'] = end - start + 1;
    }
    res.writeHead(status, headers);
    if (req.method === 'HEAD' || st.size === 0) {
      res.end();
      return;
    }
    const streams = [fs.createReadStream(file, { start, end })];
    if (encoder) streams.push(encoder);
    streams.push(res);
    pipeline(...streams, () => {});
  });
}

function put(req, res, file) {
  const tmp = path.join(path.dirname(file), `.upload-${process.pid}-${Date.now()}`);
  pipeline(req, fs.createWriteStream(tmp), (err) => {
    if (err) {
      fs.rm(tmp, () => {});
      fail(res, 500, 'upload failed');
      return;
    }
    fs.rename(tmp, file, (err) => {
      if (err) {
        fail(res, 500, 'rename failed');
        return;
      }
      res.writeHead(201);
      res.end();
    });
  });
}

const server = http.createServer((req, res) => {
  const file = resolve(req.url);
  if (!file) {
    fail(res, 404, 'not found');
    return;
  }
  switch (req.method) {
    case 'GET':
    case 'HEAD':
      get(req, res, file);
      break;
    case 'PUT':
      put(req, res, file);
      break;
    default:
      res.setHeader('Allow', 'GET, HEAD, PUT');
      fail(res, 405, 'method not allowed');
  }
});
server.requestTimeout = 0; // uploads may take longer than Node's default 5 minutes
server.listen(Number(port), '127.0.0.1', () => {
  console.log(`node: serving ${root} at http://127.0.0.1:${port}/`);
});
