// tus.js: a small tus 1.0 client for browsers, written for largo's pages.
// It speaks core, creation, termination and concatenation (ParallelUpload,
// below): POST creates an upload (with Upload-Length and Upload-Metadata),
// PATCH sends it in chunks (each with Upload-Offset, as
// application/offset+octet-stream), HEAD finds the offset the server holds
// after a pause, a reload or a lost connection, and DELETE ends it. The
// upload URL is kept in a store (localStorage on the page) under a key
// naming the file and its target, so the same file chosen again after a
// reload resumes instead of starting over.
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
		this.createHeaders = opts.createHeaders || {}; // sent with the POST alone
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
				...this.createHeaders,
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

// PARALLEL_MIN is the smallest file the page sends as a ParallelUpload:
// below it one stream does as well, in fewer requests. PARALLEL is how
// many pieces go at once.
export const PARALLEL_MIN = 256 * 1024 * 1024;
export const PARALLEL = 4;
const MIN_PIECE = 16 * 1024 * 1024;
const MAX_PIECES = 128; // the final request lists them all in one header

// pieceSize is the size of the pieces a file of size bytes is cut into:
// whole MiB, at least MIN_PIECE, at most MAX_PIECES of them.
export function pieceSize(size) {
	const mib = 1024 * 1024;
	return Math.ceil(Math.max(MIN_PIECE, Math.ceil(size / MAX_PIECES)) / mib) * mib;
}

// newConcatID returns a concat-id: 32 random hex digits.
function newConcatID() {
	return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

// ParallelUpload sends one File as pieces, PARALLEL at once, each a tus
// partial upload (Upload-Concat: partial) that says where it belongs
// (concat-id, concat-offset, concat-length: a largo server writes it
// there and hashes the file as it fills in), the lowest pieces first;
// then one final upload (Upload-Concat: final) joins them. It has
// Upload's interface and events. Its record (the concat-id, each piece's
// URL as soon as it is made, and which pieces are complete) is kept in
// the store under the file's key, so that after a reload complete pieces
// stay as they are and each piece begun resumes from the offset its
// server holds.
export class ParallelUpload {
	constructor(file, opts) {
		this.file = file;
		this.opts = opts;
		this.endpoint = new URL(opts.endpoint, location.href).href;
		this.metadata = opts.metadata || {};
		this.store = opts.store;
		this.key = opts.key;
		this.parallel = opts.parallel || PARALLEL;
		this.onProgress = opts.onProgress || (() => {});
		this.onState = opts.onState || (() => {});
		this.state = "idle";
		this.resumedAt = -1;
		this.run = 0;
		this.pieces = []; // the Upload of each piece being sent
		this.record = null; // also kept in memory: storage may be refused
		this.wake = null; // ends the final request's retry wait early
	}

	setState(state, detail) {
		this.state = state;
		this.onState(state, detail);
	}

	save() {
		this.store?.set(this.key, this.record);
	}

	forget() {
		this.record = null;
		this.store?.remove(this.key);
	}

	// load returns the record of this file's pieces: the one in memory,
	// the one kept in the store, or a new one.
	load() {
		const n = (each) => Math.ceil(this.file.size / each);
		const fits = (r) => r?.size === this.file.size && r.pieceSize > 0 && Array.isArray(r.pieces) && Array.isArray(r.done) && r.pieces.length === n(r.pieceSize) && r.done.length === r.pieces.length && typeof r.concatId === "string";
		if (fits(this.record)) return this.record;
		const saved = this.store?.get(this.key);
		if (fits(saved)) return saved;
		const each = pieceSize(this.file.size);
		return { name: this.metadata.filename, folder: this.metadata.folder || "", size: this.file.size, created: Date.now(), concatId: newConcatID(), pieceSize: each, pieces: new Array(n(each)).fill(null), done: new Array(n(each)).fill(false), sent: 0 };
	}

	span(i) {
		return Math.min(this.record.pieceSize, this.file.size - i * this.record.pieceSize);
	}

	doneBytes() {
		return this.record.done.reduce((n, d, i) => n + (d ? this.span(i) : 0), 0);
	}

	async start() {
		if (["uploading", "retrying", "done", "cancelled"].includes(this.state)) return;
		const run = ++this.run;
		const live = () => run === this.run;
		this.record = this.load();
		this.save();
		const already = this.doneBytes();
		if (this.resumedAt < 0 && this.record.pieces.some(Boolean)) this.resumedAt = already;
		this.setState("uploading");
		const moving = new Map(); // piece -> bytes of it the server holds or is sent
		const progress = () => this.onProgress(this.doneBytes() + [...moving.values()].reduce((a, b) => a + b, 0));
		progress();
		let next = 0;
		let failure = null;
		const worker = async () => {
			for (;;) {
				while (next < this.record.pieces.length && this.record.done[next]) next++;
				if (!live() || next >= this.record.pieces.length) return;
				const i = next++;
				const end = await this.piece(i, (b) => {
					moving.set(i, b);
					progress();
				});
				moving.delete(i);
				if (end.s === "failed" && live()) {
					// One piece refused: the others stop at once.
					failure = end.detail;
					this.stop();
				}
				if (end.s !== "done") return;
				this.record.pieces[i] = end.url;
				this.record.done[i] = true;
				this.record.sent = this.doneBytes();
				this.save();
				progress();
			}
		};
		await Promise.all(Array.from({ length: Math.min(this.parallel, this.record.pieces.length) }, worker));
		if (failure) {
			this.setState("failed", failure);
			return;
		}
		if (!live()) return;
		await this.final(live);
	}

	// piece sends piece i as an Upload, and resolves with how it ended:
	// { s: "done", url } or { s: "failed", detail }, "paused" or
	// "cancelled".
	piece(i, onProgress) {
		const at = i * this.record.pieceSize;
		const record = this.record;
		return new Promise((resolve) => {
			const up = new Upload(this.file.slice(at, at + this.span(i)), {
				endpoint: this.endpoint,
				metadata: { ...this.metadata, "concat-id": record.concatId, "concat-offset": String(at), "concat-length": String(this.file.size) },
				createHeaders: { "Upload-Concat": "partial" },
				chunkSize: this.opts.chunkSize,
				store: {
					get: () => (record.pieces[i] ? { url: record.pieces[i] } : null),
					set: (_, v) => {
						record.pieces[i] = v.url;
						this.save();
					},
					remove: () => {
						// A piece complete keeps its URL for the final; one
						// the server lost, or refused, is made again.
						if (up.url && up.offset >= up.file.size) record.done[i] = true;
						else record.pieces[i] = null;
						this.save();
					},
				},
				key: String(i),
				onProgress,
				onState: (s, detail) => {
					if (s === "retrying") this.setState("retrying", detail);
					if (s === "uploading" && this.state === "retrying") this.setState("uploading");
					if (s === "done" || s === "failed" || s === "cancelled" || s === "paused") {
						if (this.pieces[i] === up) delete this.pieces[i];
						resolve({ s, detail, url: up.url });
					}
				},
			});
			this.pieces[i] = up;
			up.start();
		});
	}

	// final joins the pieces, trying again after a network failure; a
	// piece the server lost starts the upload over.
	async final(live) {
		for (let attempt = 0; live(); attempt++) {
			try {
				const paths = this.record.pieces.map((u) => new URL(u).pathname);
				const res = await fetch(this.endpoint, {
					method: "POST",
					cache: "no-store",
					headers: { "Tus-Resumable": TUS_VERSION, "Upload-Concat": `final;${paths.join(" ")}`, "Upload-Metadata": encodeMetadata(this.metadata) },
				});
				if (!live()) return;
				if (res.status === 201) {
					this.forget();
					this.onProgress(this.file.size);
					this.setState("done");
					return;
				}
				const err = new HTTPError(res.status, (await res.text()).trim());
				if (res.status === 404 && attempt === 0) {
					this.forget();
					this.state = "idle";
					this.start();
					return;
				}
				if (!retryable(err) || attempt >= RETRY_DELAYS.length) {
					if (err.status !== 401 && err.status !== 403) this.forget();
					this.setState("failed", err);
					return;
				}
			} catch (err) {
				if (!live()) return;
				if (attempt >= RETRY_DELAYS.length) {
					this.setState("failed", err);
					return;
				}
			}
			this.setState("retrying", RETRY_DELAYS[attempt]);
			await new Promise((resolve) => {
				const timer = setTimeout(resolve, RETRY_DELAYS[attempt] * 1000);
				this.wake = () => {
					clearTimeout(timer);
					resolve();
				};
			});
			this.wake = null;
			if (live()) this.setState("uploading");
		}
	}

	retryNow() {
		for (const up of this.pieces) up?.retryNow();
		this.wake?.();
	}

	stop() {
		this.run++;
		const pieces = this.pieces;
		this.pieces = [];
		for (const up of pieces) up?.pause(); // each ends its worker
		this.wake?.();
	}

	pause() {
		if (this.state !== "uploading" && this.state !== "retrying") return;
		this.stop();
		this.setState("paused");
	}

	async cancel() {
		if (this.state === "done" || this.state === "cancelled") return;
		this.stop();
		this.setState("cancelled");
		const urls = (this.record || this.store?.get(this.key))?.pieces || [];
		this.forget();
		await cancelPieces(urls);
	}
}

// cancelPieces terminates the pieces at urls (null where a piece was
// never made) on the server.
export async function cancelPieces(urls) {
	await Promise.all(
		urls.filter(Boolean).map((u) =>
			fetch(u, { method: "DELETE", headers: { "Tus-Resumable": TUS_VERSION } }).catch(() => {
				// It expires on the server anyway.
			}),
		),
	);
}
