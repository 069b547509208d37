// A parallel upload with tus-js-client, the tus project's own client:
// one file sent as partial uploads at once (parallelUploads), then joined
// by a final upload. largo's end-to-end tests run it under Node:
//
//   node tus-parallel.mjs --endpoint URL --file PATH --name NAME [--token T]
//        [--parallel N] [--place ID] [--parts URL,URL,...] [--stop-at BYTES]
//
// The partials carry the file's name (metadataForPartialUploads), as
// largo wants of every upload. --place ID makes each partial say where it
// belongs, as a page or app can with the client's own hooks: the parts
// get lengths that differ (parallelUploadBoundaries), and onBeforeRequest
// adds concat-offset, found from a partial's Upload-Length, to the
// concat-id and concat-length every partial carries. --parts resumes the
// partial uploads of an earlier run; --stop-at makes the client, once
// that many bytes are sent, stop and hang until the process is killed.
// Lines on stdout: "parts URL URL..." once every partial has its
// URL, "stopped SENT", "final MS STATUS" for the final request (its time
// from sending to the answer), "done URL"; on failure "error MESSAGE" and
// exit code 1.
import fs from 'node:fs'
import * as tus from 'tus-js-client'

function parseArgs(argv) {
  const opts = {}
  for (let i = 0; i < argv.length; i += 2) {
    if (!argv[i].startsWith('--') || i + 1 >= argv.length) {
      throw new Error(`bad argument ${argv[i]}`)
    }
    opts[argv[i].slice(2)] = argv[i + 1]
  }
  for (const k of ['endpoint', 'file', 'name']) {
    if (!opts[k]) throw new Error(`--${k} is required`)
  }
  return opts
}

// boundaries cuts size bytes into n parts whose lengths all differ, by a
// MiB each, so that a partial's length tells which part it is.
function boundaries(size, n) {
  const step = Math.min(1 << 20, Math.floor(size / (4 * n * n)))
  const base = Math.floor(size / n) + Math.floor(((n - 1) * step) / 2)
  const parts = []
  let at = 0
  for (let i = 0; i < n; i++) {
    const end = i === n - 1 ? size : at + base - i * step
    parts.push({ start: at, end })
    at = end
  }
  return parts
}

const b64 = (s) => Buffer.from(String(s)).toString('base64')

async function main() {
  const opts = parseArgs(process.argv.slice(2))
  const size = fs.statSync(opts.file).size
  const parallel = Number(opts.parallel || 4)
  const stopAt = opts['stop-at'] ? Number(opts['stop-at']) : Infinity
  const headers = opts.token ? { Authorization: `Bearer ${opts.token}` } : {}
  const metadata = { filename: opts.name }
  const partialMeta = { filename: opts.name }
  let parts = null
  if (opts.place) {
    parts = boundaries(size, parallel)
    const lengths = new Set(parts.map((p) => p.end - p.start))
    if (lengths.size !== parts.length) throw new Error('parts of equal lengths')
    partialMeta['concat-id'] = opts.place
    partialMeta['concat-length'] = String(size)
  }
  let stopped = false
  let finalStart = 0
  await new Promise((resolve, reject) => {
    const upload = new tus.Upload(fs.createReadStream(opts.file), {
      endpoint: opts.endpoint,
      headers,
      metadata,
      metadataForPartialUploads: partialMeta,
      parallelUploads: parallel,
      parallelUploadBoundaries: parts,
      retryDelays: null,
      storeFingerprintForResuming: true,
      removeFingerprintOnSuccess: false,
      fingerprint: async () => 'file',
      urlStorage: {
        findAllUploads: async () => [],
        findUploadsByFingerprint: async () => [],
        removeUpload: async () => {},
        addUpload: async (_, stored) => {
          console.log(`parts ${stored.parallelUploadUrls.join(' ')}`)
          return 'file'
        },
      },
      onBeforeRequest(req) {
        const concat = req.getHeader('Upload-Concat') || ''
        if (req.getMethod() === 'POST' && concat === 'partial' && parts) {
          const length = Number(req.getHeader('Upload-Length'))
          const part = parts.find((p) => p.end - p.start === length)
          req.setHeader('Upload-Metadata', `${req.getHeader('Upload-Metadata')},concat-offset ${b64(part.start)}`)
        }
        if (req.getMethod() === 'POST' && concat.startsWith('final;')) finalStart = performance.now()
      },
      onAfterResponse(req, res) {
        if (req.getMethod() === 'POST' && (req.getHeader('Upload-Concat') || '').startsWith('final;')) {
          console.log(`final ${Math.round(performance.now() - finalStart)} ${res.getStatus()}`)
        }
      },
      onProgress(sent) {
        if (sent >= stopAt && !stopped) {
          stopped = true
          upload.abort()
          console.log(`stopped ${sent}`)
          setInterval(() => {}, 1 << 30) // wait to be killed
        }
      },
      onError: reject,
      onSuccess() {
        console.log(`done ${upload.url}`)
        resolve()
      },
    })
    if (opts.parts) {
      upload.resumeFromPreviousUpload({ parallelUploadUrls: opts.parts.split(','), urlStorageKey: 'file' })
    }
    upload.start()
  })
}

main().catch((err) => {
  console.log(`error ${String(err.message || err).split('\n')[0]}`)
  process.exit(1)
})
