// tus.js: a small tus 1.0 client for browsers, written for largo's pages.
// It speaks core, creation and termination: POST creates an upload (with
// Upload-Length and Upload-Metadata), PATCH sends it in chunks (each with
// Upload-Offset, as application/offset+octet-stream), HEAD finds the
// offset the server holds after a pause, a reload or a lost connection,
// and DELETE ends it. The upload URL is kept in a store (localStorage on
// the page) under a key naming the file and its target, so the same file
// chosen again after a reload resumes instead of starting over.
//
// PATCH goes through XMLHttpRequest because fetch reports no upload
// progress; the other requests use fetch. No request carries a credential
// of its own: same-origin requests carry the one the browser holds for
// the server (fetch's default credentials mode, "same-origin", and
// XMLHttpRequest's).

export const TUS_VERSION = "1.0.0";

// DEFAULT_CHUNK is the most bytes one PATCH carries: small enough that a
// proxy's body limit rarely bites, large enough that requests stay few.
export const DEFAULT_CHUNK = 16 * 1024 * 1024;

// RETRY_DELAYS are the waits, in seconds, after a failed attempt; the
// count restarts whenever an attempt moved bytes.
const RETRY_DELAYS = [1, 2, 4, 8, 16, 30, 30, 30, 30, 30];

// STALL_MS ends (and retries) a PATCH that sends nothing for this long.
const STALL_MS = 30000;

// HTTPError is an answer the server gave, with its status and its
// one-line reason.
export class HTTPError extends Error {
	constructor(status, reason) {
		super(reason || `HTTP ${status}`);
		this.status = status;
	}
}

class Stopped extends Error {}

// encodeMetadata writes tus Upload-Metadata: keys with base64 of the
// values' UTF-8.
export function encodeMetadata(meta) {
	return Object.entries(meta)
		.filter(([, v]) => v !== undefined && v !== null && v !== "")
		.map(([k, v]) => {
			let bin = "";
			for (const b of new TextEncoder().encode(String(v))) bin += String.fromCharCode(b);
			return `${k} ${btoa(bin)}`;
		})
		.join(",");
}

// retryable reports whether an attempt that failed with err is worth
// trying again: network errors, 5xx but 507, 408, 409 (offsets disagree:
// ask again) and 429.
function retryable(err) {
	if (!(err instanceof HTTPError)) return true;
	const s = err.status;
	return (s >= 500 && s !== 507 && s !== 501) || s === 408 || s === 409 || s === 429;
}

// Upload sends one File to a tus endpoint. Events go to the callbacks:
// onProgress(bytes) as bytes leave, onState(state, detail) on each change
// of state: "uploading", "retrying" (detail: seconds), "paused", "done",
// "failed" (detail: the error), "cancelled".
export class Upload {
	constructor(file, opts) {
		this.file = file;
		this.endpoint = new URL(opts.endpoint, location.href).href;
		this.metadata = opts.metadata || {};
		this.chunkSize = opts.chunkSize || DEFAULT_CHUNK;
		this.store = opts.store;
		this.key = opts.key;
		this.onProgress = opts.onProgress || (() => {});
		this.onState = opts.onState || (() => {});
		this.url = null;
		this.offset = 0; // what the server confirmed
		this.sent = 0; // what left, including the chunk in flight
		this.resumedAt = -1; // the offset found when resuming, -1 if new
		this.state = "idle";
		this.run = 0; // increases on every start and stop
		this.inflight = null; // abort function of the current request
		this.wake = null; // ends a retry wait early
	}

	setState(state, detail) {
		this.state = state;
		this.onState(state, detail);
	}

	headers(extra) {
		return { "Tus-Resumable": TUS_VERSION, ...extra };
	}

	// start begins or resumes the upload. It resolves when the upload
	// ends, is paused or cancelled, or fails (see state).
	async start() {
		if (this.state === "uploading" || this.state === "retrying" || this.state === "done" || this.state === "cancelled") return;
		const run = ++this.run;
		const live = () => run === this.run;
		this.setState("uploading");
		let attempt = 0;
		let known = false; // whether this.offset is the server's, now
		while (live()) {
			try {
				if (!this.url) {
					const saved = this.store?.get(this.key);
					if (saved?.url) this.url = saved.url;
				}
				if (this.url && !known) {
					const found = await this.find(live);
					if (found === null) {
						this.url = null;
						this.store?.remove(this.key);
						continue;
					}
					this.offset = this.sent = found;
					if (this.resumedAt < 0) this.resumedAt = found;
					known = true;
				}
				if (!this.url) {
					await this.create(live);
					this.offset = this.sent = 0;
					known = true;
				}
				this.onProgress(this.offset);
				while (this.offset < this.file.size) {
					const before = this.offset;
					this.offset = await this.patch(live);
					this.sent = this.offset;
					this.onProgress(this.offset);
					if (this.offset > before) attempt = 0;
				}
				this.store?.remove(this.key);
				this.setState("done");
				return;
			} catch (err) {
				if (!live() || err instanceof Stopped) return;
				known = false;
				if (!retryable(err) || attempt >= RETRY_DELAYS.length) {
					if (err instanceof HTTPError && err.status !== 401 && err.status !== 403) {
						// The server refused this upload for good: forget it.
						this.store?.remove(this.key);
						this.url = null;
					}
					this.setState("failed", err);
					return;
				}
				const wait = RETRY_DELAYS[attempt++];
				this.setState("retrying", wait);
				await new Promise((resolve) => {
					const timer = setTimeout(resolve, wait * 1000);
					this.wake = () => {
						clearTimeout(timer);
						resolve();
					};
				});
				this.wake = null;
				if (!live()) return;
				this.setState("uploading");
			}
		}
	}

	// retryNow ends a retry wait at once (the browser came back online).
	retryNow() {
		this.wake?.();
	}

	// pause stops sending; start resumes from the server's offset.
	pause() {
		if (this.state !== "uploading" && this.state !== "retrying") return;
		this.stop();
		this.setState("paused");
	}

	// cancel stops the upload and terminates it on the server.
	async cancel() {
		if (this.state === "done" || this.state === "cancelled") return;
		this.stop();
		this.setState("cancelled");
		this.store?.remove(this.key);
		const url = this.url || this.store?.get(this.key)?.url;
		this.url = null;
		if (url) {
			try {
				await fetch(url, { method: "DELETE", headers: this.headers() });
			} catch {
				// It expires on the server anyway.
			}
		}
	}

	stop() {
		this.run++;
		this.inflight?.();
		this.inflight = null;
		this.wake?.();
	}

	// request sends one fetch that stop() can abort.
	async request(live, url, init) {
		const ctl = new AbortController();
		this.inflight = () => ctl.abort();
		try {
			const res = await fetch(url, { ...init, signal: ctl.signal, cache: "no-store" });
			if (!live()) throw new Stopped();
			return res;
		} catch (err) {
			if (!live() || err.name === "AbortError") throw new Stopped();
			throw err;
		} finally {
			this.inflight = null;
		}
	}

	// find asks the server for the offset of this.url, or null when the
	// upload is gone.
	async find(live) {
		const res = await this.request(live, this.url, { method: "HEAD", headers: this.headers() });
		if (res.status === 404 || res.status === 410 || res.status === 403) return null;
		if (!res.ok) throw new HTTPError(res.status, res.statusText);
		const off = Number(res.headers.get("Upload-Offset"));
		if (!Number.isSafeInteger(off) || off < 0 || off > this.file.size) return null;
		const len = res.headers.get("Upload-Length");
		if (len !== null && Number(len) !== this.file.size) return null;
		return off;
	}

	// create makes the upload on the server and remembers its URL.
	async create(live) {
		const res = await this.request(live, this.endpoint, {
			method: "POST",
			headers: this.headers({
				"Upload-Length": String(this.file.size),
				"Upload-Metadata": encodeMetadata(this.metadata),
			}),
		});
		if (res.status !== 201) throw new HTTPError(res.status, (await res.text()).trim());
		const loc = res.headers.get("Location");
		if (!loc) throw new HTTPError(res.status, "no Location in the answer");
		this.url = new URL(loc, this.endpoint).href;
		this.store?.set(this.key, { url: this.url, name: this.metadata.filename, folder: this.metadata.folder || "", size: this.file.size, created: Date.now() });
	}

	// patch sends the next chunk and returns the server's new offset.
	patch(live) {
		const start = this.offset;
		const end = Math.min(start + this.chunkSize, this.file.size);
		return new Promise((resolve, reject) => {
			const xhr = new XMLHttpRequest();
			let last = Date.now();
			const watchdog = setInterval(() => {
				if (Date.now() - last > STALL_MS) xhr.abort();
			}, 1000);
			let stopped = false;
			this.inflight = () => {
				stopped = true;
				xhr.abort();
			};
			const done = (fn, v) => {
				clearInterval(watchdog);
				this.inflight = null;
				fn(v);
			};
			xhr.open("PATCH", this.url);
			for (const [k, v] of Object.entries(this.headers({ "Upload-Offset": String(start), "Content-Type": "application/offset+octet-stream" }))) {
				xhr.setRequestHeader(k, v);
			}
			xhr.upload.onprogress = (ev) => {
				last = Date.now();
				if (!live()) return;
				this.sent = start + ev.loaded;
				this.onProgress(this.sent);
			};
			xhr.onload = () => {
				if (!live()) return done(reject, new Stopped());
				if (xhr.status === 204) {
					const off = Number(xhr.getResponseHeader("Upload-Offset"));
					if (!Number.isSafeInteger(off) || off < start) return done(reject, new HTTPError(502, "bad Upload-Offset in the answer"));
					return done(resolve, off);
				}
				done(reject, new HTTPError(xhr.status, xhr.responseText.trim()));
			};
			xhr.onerror = () => done(reject, live() ? new Error("network error") : new Stopped());
			xhr.onabort = () => done(reject, stopped || !live() ? new Stopped() : new Error("stalled: no progress"));
			xhr.send(this.file.slice(start, end));
		});
	}
}
