// A resumable upload with tus-js-client, the tus project's own client, as
// a browser app or a Node service would make it. largo's end-to-end tests
// run it under Node:
//
//   node tus-upload.mjs --endpoint URL --file PATH --name NAME [--token T]
//        [--chunk BYTES] [--stop-at BYTES] [--url UPLOAD_URL]
//        [--protocol tus-v1|ietf-draft-03|ietf-draft-05] [--retries MS,MS,...]
//
// --stop-at makes the client, once the server has accepted that many
// bytes, cut its request in flight and hang until the process is killed;
// --url resumes an upload made earlier, from the offset the server
// reports. --protocol chooses the wire: tus (the default) or the IETF
// draft -03 or -05 (interop versions 5 and 6), whose endpoint is a folder
// that uploads are POSTed to. --retries lets the client retry a failed
// request after each of the delays, resuming from the offset the server
// reports (the default is no retry). The file's sha256 goes in the
// upload's metadata. Lines on
// stdout: "url URL", "chunk ACCEPTED TOTAL" after each chunk,
// "stopped ACCEPTED", "done URL"; on failure "error MESSAGE" and exit
// code 1.
import crypto from 'node:crypto'
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

async function sha256(path) {
  const h = crypto.createHash('sha256')
  for await (const chunk of fs.createReadStream(path)) h.update(chunk)
  return h.digest('hex')
}

async function main() {
  const opts = parseArgs(process.argv.slice(2))
  const size = fs.statSync(opts.file).size
  const chunkSize = Number(opts.chunk || 4 << 20)
  const stopAt = opts['stop-at'] ? Number(opts['stop-at']) : Infinity
  let stopped = false
  const headers = opts.token ? { Authorization: `Bearer ${opts.token}` } : {}
  const sum = await sha256(opts.file)
  await new Promise((resolve, reject) => {
    const upload = new tus.Upload(fs.createReadStream(opts.file), {
      endpoint: opts.endpoint,
      uploadUrl: opts.url || null,
      uploadSize: size,
      chunkSize,
      headers,
      metadata: { filename: opts.name, sha256: sum },
      protocol: opts.protocol || 'tus-v1',
      retryDelays: opts.retries ? opts.retries.split(',').map(Number) : null,
      storeFingerprintForResuming: false,
      onUploadUrlAvailable() {
        console.log(`url ${upload.url}`)
      },
      onChunkComplete(_, accepted, total) {
        console.log(`chunk ${accepted} ${total}`)
        if (accepted >= stopAt && !stopped) {
          stopped = true
          upload.abort()
          console.log(`stopped ${accepted}`)
          setInterval(() => {}, 1 << 30) // wait to be killed
        }
      },
      onError: reject,
      onSuccess() {
        console.log(`done ${upload.url}`)
        resolve()
      },
    })
    upload.start()
  })
}

main().catch((err) => {
  console.log(`error ${String(err.message || err).split('\n')[0]}`)
  process.exit(1)
})
