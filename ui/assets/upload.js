// upload.js: the upload area of a folder page, which the server renders
// only where the visitor may write, and of an upload page (a drop box's).
// It takes files from the pickers or
// from files and folders dropped anywhere on the page, and sends each
// through the tus client (tus.js), a few at a time (a file of PARALLEL_MIN
// or more as pieces over several connections, a ParallelUpload), with one
// row per file: a progress bar, bytes, rate, time left, pause/resume and
// cancel. Upload URLs are kept in localStorage, so an upload cut by a
// reload or a lost connection resumes when the same file is chosen or
// dropped again; the page lists such unfinished uploads. The folder's
// table refreshes as uploads finish. The area's data attributes say where
// it sends (endpoint), whose uploads it lists and resumes (scope: a drop
// box's page sees only its own link's), whether it takes folders
// (files-only) and whether a name already taken is refused (create-only).
//
// The page holds no credential and asks for none: the browser sends the
// one it was given when its user signed in (Basic auth, kept by the
// browser where no script can read it) with every request to the server,
// these uploads included.

import { PARALLEL_MIN, ParallelUpload, TUS_VERSION, Upload, cancelPieces } from "./tus.js";
import { formatDuration, formatRate, formatSize } from "./format.js";

const UPLOAD_PREFIX = "largo.upload ";
const TUS_HEADERS = { "Tus-Resumable": TUS_VERSION };
// CONCURRENCY is how many files upload at once.
const CONCURRENCY = 3;
// TICK_MS is how often rows and the summary are redrawn.
const TICK_MS = 250;
// RATE_WINDOW_MS is the span the rate is measured over.
const RATE_WINDOW_MS = 4000;

// store keeps upload URLs in localStorage; it works, emptily, where
// storage is refused. An upload URL is no secret: every request to it
// needs a credential that may write (the browser's, never kept here), so
// storage that any script of the origin could read holds nothing to
// steal.
const store = {
	get(key) {
		try {
			return JSON.parse(localStorage.getItem(UPLOAD_PREFIX + key));
		} catch {
			return null;
		}
	},
	set(key, value) {
		try {
			localStorage.setItem(UPLOAD_PREFIX + key, JSON.stringify(value));
		} catch {
			// Without storage an upload resumes only while the page lives.
		}
	},
	remove(key) {
		try {
			localStorage.removeItem(UPLOAD_PREFIX + key);
		} catch {
			// Nothing kept, nothing to remove.
		}
	},
	entries() {
		const out = [];
		try {
			for (let i = 0; i < localStorage.length; i++) {
				const k = localStorage.key(i);
				if (k?.startsWith(UPLOAD_PREFIX)) out.push([k.slice(UPLOAD_PREFIX.length), JSON.parse(localStorage.getItem(k))]);
			}
		} catch {
			// As above.
		}
		return out;
	},
};

// uploadKey names a file and its target: the same file chosen again for
// the same folder, on a page of the same scope, finds its upload.
function uploadKey(scope, folder, file) {
	const key = [folder, file.name, file.size, file.lastModified];
	return JSON.stringify(scope ? [...key, scope] : key);
}

// scoped is the store of a scope's uploads: what it keeps is marked
// with the scope, so that a page lists no other scope's.
function scoped(scope) {
	if (!scope) return store;
	return { ...store, set: (key, value) => store.set(key, { ...value, scope }) };
}

function join(...parts) {
	return parts.filter((p) => p !== "").join("/");
}

const hidden = (name) => name.startsWith(".");

export class Uploader {
	// listing is the folder's table to refresh (null: none); onDone is
	// told of each file uploaded.
	constructor(section, listing, { onDone } = {}) {
		this.section = section;
		this.listing = listing;
		this.onDone = onDone;
		this.endpoint = section.dataset.endpoint;
		this.scope = section.dataset.scope || "";
		this.store = scoped(this.scope);
		this.filesOnly = section.dataset.filesOnly !== undefined;
		this.createOnly = section.dataset.createOnly !== undefined;
		this.folder = document.getElementById("main").dataset.folder || "";
		this.jobs = [];
		this.skipped = 0;
		this.folders = 0; // folders dropped where only files are taken
		this.refreshTimer = 0;
		this.el = (id) => document.getElementById(id);
	}

	init() {
		this.section.hidden = false;
		const files = this.el("pick-files");
		const folder = this.el("pick-folder");
		this.el("choose-files").addEventListener("click", () => files.click());
		files.addEventListener("change", () => {
			for (const f of files.files) this.add(f, "");
			files.value = "";
		});
		this.el("choose-folder")?.addEventListener("click", () => folder.click());
		folder?.addEventListener("change", () => {
			for (const f of folder.files) {
				const rel = (f.webkitRelativePath || f.name).split("/");
				rel.pop();
				if (rel.some(hidden) || hidden(f.name)) {
					this.skipped++;
					continue;
				}
				this.add(f, rel.join("/"));
			}
			folder.value = "";
		});
		this.wireDrop();
		window.addEventListener("online", () => {
			for (const j of this.jobs) j.upload?.retryNow();
		});
		setInterval(() => this.tick(), TICK_MS);
		this.showUnfinished();
	}

	wireDrop() {
		const body = document.body;
		const hasFiles = (ev) => Array.from(ev.dataTransfer?.types || []).includes("Files");
		document.addEventListener("dragover", (ev) => {
			if (!hasFiles(ev)) return;
			ev.preventDefault();
			ev.dataTransfer.dropEffect = "copy";
			body.classList.add("dragging");
		});
		document.addEventListener("dragleave", (ev) => {
			if (ev.relatedTarget === null) body.classList.remove("dragging");
		});
		document.addEventListener("drop", (ev) => {
			body.classList.remove("dragging");
			if (!hasFiles(ev)) return;
			ev.preventDefault();
			// Entries must be taken before the event ends.
			const items = Array.from(ev.dataTransfer.items || []);
			const entries = items.map((i) => (i.kind === "file" && i.webkitGetAsEntry ? i.webkitGetAsEntry() : null));
			if (entries.length > 0 && entries.every(Boolean)) {
				for (const e of entries) this.walk(e, "");
			} else {
				for (const f of ev.dataTransfer.files) this.add(f, "");
			}
		});
	}

	// walk adds a dropped entry: a file, or a folder's whole tree, its
	// relative path going into the upload's folder. Hidden names are
	// skipped, as the server would refuse them.
	async walk(entry, dir) {
		if (hidden(entry.name) && dir !== "") {
			this.skipped++;
			return;
		}
		if (entry.isFile) {
			const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
			this.add(file, dir);
			return;
		}
		if (!entry.isDirectory) return;
		if (this.filesOnly) {
			this.folders++;
			this.summarize();
			return;
		}
		const reader = entry.createReader();
		const sub = join(dir, entry.name);
		for (;;) {
			const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
			if (batch.length === 0) break;
			for (const child of batch) await this.walk(child, sub);
		}
	}

	// add queues a file for the folder dir below the page's folder.
	add(file, dir) {
		const folder = join(this.folder, dir);
		const key = uploadKey(this.scope, folder, file);
		let job = this.jobs.find((j) => j.key === key);
		if (job && job.upload && !["done", "cancelled"].includes(job.state)) return;
		if (!job || job.upload) {
			job = { key, row: this.newRow() };
			this.jobs.push(job);
		}
		Object.assign(job, { file, folder, label: join(dir, file.name), bytes: 0, samples: [], state: "queued", error: null });
		const Kind = file.size >= PARALLEL_MIN ? ParallelUpload : Upload;
		job.upload = new Kind(file, {
			endpoint: this.endpoint,
			metadata: { filename: file.name, folder },
			store: this.store,
			key,
			onProgress: (b) => {
				job.bytes = b;
			},
			onState: (s, detail) => this.onState(job, s, detail),
		});
		this.draw(job);
		this.pump();
	}

	// pump starts queued uploads while fewer than CONCURRENCY run.
	pump() {
		let running = this.jobs.filter((j) => j.state === "uploading" || j.state === "retrying").length;
		for (const j of this.jobs) {
			if (running >= CONCURRENCY) break;
			if (j.state === "queued" && j.upload) {
				running++;
				j.state = "uploading";
				j.upload.start();
			}
		}
	}

	resume(job) {
		job.state = "queued";
		job.error = null;
		job.samples = [];
		this.draw(job);
		this.pump();
	}

	onState(job, state, detail) {
		job.state = state;
		job.samples = [];
		if (state === "failed") job.error = detail;
		if (state === "retrying") job.retryIn = detail;
		if (state === "done") job.bytes = job.file.size;
		// Screen readers hear each file's end, not every tick of the bars.
		const news = { done: "uploaded", failed: "failed", cancelled: "cancelled" }[state];
		if (news) this.el("upload-news").textContent = `${job.label} ${news}.`;
		this.draw(job);
		if (state !== "uploading" && state !== "retrying") this.pump();
		if (state === "done") {
			this.onDone?.(job);
			this.scheduleRefresh();
		}
	}

	scheduleRefresh() {
		if (!this.listing) return;
		clearTimeout(this.refreshTimer);
		this.refreshTimer = setTimeout(() => {
			this.listing.refresh().catch(() => {});
		}, 300);
	}

	newRow() {
		const li = this.el("upload-row").content.firstElementChild.cloneNode(true);
		this.el("upload-list").append(li);
		const q = (c) => li.querySelector(c);
		const row = { li, name: q(".up-name"), state: q(".up-state"), bar: q(".up-bar"), bytes: q(".up-bytes"), rate: q(".up-rate"), eta: q(".up-eta"), pause: q(".up-pause"), cancel: q(".up-cancel") };
		row.pause.addEventListener("click", () => this.toggle(row));
		row.cancel.addEventListener("click", () => this.cancel(row));
		return row;
	}

	jobOf(row) {
		return this.jobs.find((j) => j.row === row);
	}

	toggle(row) {
		const job = this.jobOf(row);
		if (!job?.upload) return;
		if (job.state === "uploading" || job.state === "retrying") job.upload.pause();
		else if (job.state === "paused" || job.state === "failed") {
			job.upload.state = "idle";
			this.resume(job);
		} else if (job.state === "queued") {
			job.state = "paused";
			job.upload.state = "paused";
			this.draw(job);
		}
	}

	async cancel(row) {
		const job = this.jobOf(row);
		if (!job) return;
		if (job.upload) {
			await job.upload.cancel();
		} else {
			// An unfinished upload from an earlier visit: end it on the
			// server (each of its pieces, for a parallel one).
			this.store.remove(job.key);
			if (job.pieces) {
				await cancelPieces(job.pieces);
			} else {
				try {
					await fetch(job.url, { method: "DELETE", headers: TUS_HEADERS });
				} catch {
					// It expires on the server anyway.
				}
			}
			job.state = "cancelled";
			this.draw(job);
		}
		this.pump();
	}

	// showUnfinished lists the uploads to this folder and below that an
	// earlier visit left, with the offset the server holds.
	async showUnfinished() {
		const below = (f) => f === this.folder || this.folder === "" || f.startsWith(`${this.folder}/`);
		for (const [key, saved] of store.entries()) {
			if (!saved || typeof saved.folder !== "string" || (saved.scope || "") !== this.scope || !below(saved.folder) || this.jobs.some((j) => j.key === key)) continue;
			let offset = 0;
			try {
				// A parallel upload (tus.js) keeps the bytes of its complete
				// pieces: what the page shows until it resumes.
				const res = saved.pieces ? null : await fetch(saved.url, { method: "HEAD", headers: TUS_HEADERS, cache: "no-store" });
				if (res && (res.status === 404 || res.status === 410 || res.status === 403)) {
					this.store.remove(key);
					continue;
				}
				offset = res ? Number(res.headers.get("Upload-Offset")) || 0 : saved.sent || 0;
			} catch {
				continue;
			}
			if (this.jobs.some((j) => j.key === key)) continue;
			const dir = saved.folder.slice(this.folder.length).replace(/^\//, "");
			const pieces = Array.isArray(saved.pieces) ? saved.pieces : null;
			const job = { key, url: saved.url, pieces, label: join(dir, saved.name), size: saved.size, bytes: offset, state: "interrupted", samples: [], row: this.newRow() };
			this.jobs.push(job);
			this.draw(job);
		}
	}

	// tick measures rates and redraws what moves.
	tick() {
		const now = performance.now();
		let changed = false;
		for (const j of this.jobs) {
			if (j.state !== "uploading") continue;
			j.samples.push([now, j.bytes]);
			while (j.samples.length > 2 && now - j.samples[0][0] > RATE_WINDOW_MS) j.samples.shift();
			this.draw(j);
			changed = true;
		}
		if (changed) this.summarize();
	}

	rate(job) {
		const s = job.samples;
		if (s.length < 2) return 0;
		const [t0, b0] = s[0];
		const [t1, b1] = s[s.length - 1];
		return t1 > t0 ? ((b1 - b0) * 1000) / (t1 - t0) : 0;
	}

	draw(job) {
		const r = job.row;
		const size = job.file ? job.file.size : job.size;
		r.name.textContent = job.label;
		r.bar.value = size > 0 ? Math.min(job.bytes / size, 1) : job.state === "done" ? 1 : 0;
		r.bar.setAttribute("aria-label", `Progress of ${job.label}`);
		r.bytes.textContent = `${formatSize(job.bytes)} of ${formatSize(size)}`;
		const rate = this.rate(job);
		const active = job.state === "uploading";
		r.rate.textContent = active && rate > 0 ? formatRate(rate) : "";
		r.eta.textContent = active && rate > 0 ? `${formatDuration((size - job.bytes) / rate)} left` : "";
		r.li.className = `up ${job.state}`;
		r.li.dataset.state = job.state;
		const resumed = job.upload?.resumedAt > 0 ? `, resumed at ${formatSize(job.upload.resumedAt)}` : "";
		const states = {
			queued: "Waiting",
			uploading: `Uploading${resumed}`,
			retrying: `Connection lost: retrying in ${job.retryIn} s`,
			paused: "Paused",
			done: `Uploaded${resumed}`,
			cancelled: "Cancelled",
			interrupted: "Interrupted: choose or drop the same file to resume",
			failed: `Failed: ${this.reason(job.error)}`,
		};
		r.state.textContent = states[job.state] || job.state;
		const pausable = ["uploading", "retrying", "queued"].includes(job.state);
		r.pause.hidden = !job.upload || !(pausable || job.state === "paused" || job.state === "failed");
		r.pause.textContent = pausable ? "Pause" : job.state === "failed" ? "Retry" : "Resume";
		r.pause.setAttribute("aria-label", `${r.pause.textContent} ${job.label}`);
		r.cancel.hidden = ["done", "cancelled"].includes(job.state);
		r.cancel.textContent = job.state === "interrupted" ? "Discard" : "Cancel";
		r.cancel.setAttribute("aria-label", `${r.cancel.textContent} ${job.label}`);
		this.summarize();
	}

	reason(err) {
		if (!err) return "unknown error";
		if (err.status === 401) return "not signed in: reload the page, sign in and retry";
		if (err.status === 403) return "not allowed here";
		if (err.status === 412 && this.createOnly) return "a file of this name is here already: rename yours and send it again";
		return err.message || String(err);
	}

	summarize() {
		const live = this.jobs.filter((j) => j.upload && j.state !== "cancelled");
		const out = [];
		if (live.length > 0) {
			const done = live.filter((j) => j.state === "done").length;
			const failed = live.filter((j) => j.state === "failed").length;
			const total = live.reduce((n, j) => n + j.file.size, 0);
			const sent = live.reduce((n, j) => n + Math.min(j.bytes, j.file.size), 0);
			const rate = live.reduce((n, j) => n + (j.state === "uploading" ? this.rate(j) : 0), 0);
			if (done === live.length) out.push(`${live.length === 1 ? "1 file" : `${live.length} files`} uploaded, ${formatSize(total)}`);
			else {
				out.push(`${done} of ${live.length === 1 ? "1 file" : `${live.length} files`} uploaded`, `${formatSize(sent)} of ${formatSize(total)}`);
				if (rate > 0) out.push(formatRate(rate), `${formatDuration((total - sent) / rate)} left`);
			}
			if (failed > 0) out.push(`${failed} failed`);
		}
		if (this.skipped > 0) out.push(`${this.skipped} hidden ${this.skipped === 1 ? "name" : "names"} skipped`);
		if (this.folders > 0) out.push(`${this.folders === 1 ? "1 folder" : `${this.folders} folders`} skipped: only files are taken here`);
		this.el("upload-summary").textContent = out.join(" · ");
	}
}
