// preview.js: a look at a file before downloading it, in a panel over the
// page, with the previous and next file of the listing and the download
// button. Nothing is loaded until a preview is asked for, and only what
// it needs: images and PDFs as the browser loads them, audio and video
// through the browser's own players (which fetch what they play by
// ranges, so seeking into a 5 GiB film reads only around the place
// sought), text by its first MiB, read with one range request.
//
// No file ever becomes part of the page: an image is an <img>, text is
// written as text (HTML and SVG files too), and a PDF is shown in a frame
// by the browser's own viewer, an extension of the browser that reads
// the file in a process and an origin of its own. Only names the page
// takes for PDFs are framed, and whatever the server answers for them is
// sent, as every file is, with Content-Security-Policy: sandbox and
// nosniff, so that HTML named .pdf runs nothing. (A frame's sandbox
// attribute would say the same for any file, but the browser then
// refuses to show a PDF at all.)

import { formatSize } from "./format.js";

// TEXT_BYTES is how much of a text file a preview reads.
const TEXT_BYTES = 1 << 20;

const KINDS = {
	image: "png jpg jpeg gif webp avif bmp ico",
	video: "mp4 m4v webm ogv mov",
	audio: "mp3 m4a aac ogg oga opus wav flac",
	pdf: "pdf",
	text:
		"txt md markdown csv tsv log json jsonl ndjson xml yaml yml toml ini conf cfg env properties sql " +
		"go mod sum js mjs cjs ts tsx jsx css scss html htm svg py rb rs c h cc cpp hpp java kt swift sh bash zsh fish " +
		"ps1 bat php pl lua r scala cs fs ex exs erl hs ml nix tf dockerfile makefile gitignore diff patch srt vtt tex rst adoc",
};
const BY_EXT = new Map();
for (const [kind, exts] of Object.entries(KINDS)) for (const e of exts.split(" ")) BY_EXT.set(e, kind);
// Files named without an extension that are text.
const TEXT_NAMES = new Set(["readme", "license", "copying", "makefile", "dockerfile", "changelog", "authors", "notice"]);

// kindOf returns how a file is previewed, by its name, or "" when it is
// not.
export function kindOf(name) {
	const lower = name.toLowerCase();
	const dot = lower.lastIndexOf(".");
	if (dot <= 0) return TEXT_NAMES.has(lower) ? "text" : "";
	return BY_EXT.get(lower.slice(dot + 1)) || "";
}

// previewable reports whether a row is a file that has a preview.
export const previewable = (r) => !r.dir && kindOf(r.name) !== "";

export class Preview {
	constructor(listing) {
		this.listing = listing;
		this.el = (id) => document.getElementById(id);
		this.dialog = this.el("preview");
		this.body = this.el("preview-body");
		this.note = this.el("preview-note");
		this.files = [];
		this.at = -1;
		this.reading = null; // the text read in flight
		this.back = null; // where the focus goes when the panel closes
	}

	init() {
		this.el("preview-prev").addEventListener("click", () => this.step(-1));
		this.el("preview-next").addEventListener("click", () => this.step(1));
		this.el("preview-close").addEventListener("click", () => this.dialog.close());
		this.dialog.addEventListener("close", () => this.stop());
		this.dialog.addEventListener("keydown", (ev) => {
			if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
			const t = ev.target;
			if (t instanceof HTMLMediaElement || t instanceof HTMLInputElement) return; // their own keys seek
			if (ev.key === "ArrowRight" || ev.key === "PageDown") {
				ev.preventDefault();
				this.step(1);
			} else if (ev.key === "ArrowLeft" || ev.key === "PageUp") {
				ev.preventDefault();
				this.step(-1);
			}
		});
	}

	// open previews the file of row r, among the files shown that have a
	// preview, in the listing's order.
	open(r) {
		this.files = this.listing.shown().filter(previewable);
		this.at = this.files.indexOf(r);
		if (this.at < 0) return;
		this.back = r.tr.querySelector("td.name a");
		this.show();
		if (!this.dialog.open) this.dialog.showModal();
		this.el("preview-close").focus();
	}

	step(d) {
		const next = this.at + d;
		if (next < 0 || next >= this.files.length) return;
		this.at = next;
		this.show();
	}

	// stop ends what the preview loads, and gives the focus back.
	stop() {
		this.reading?.abort();
		this.reading = null;
		this.clear();
		const back = this.files[this.at]?.tr.querySelector("td.name a") || this.back;
		if (back?.isConnected) back.focus();
	}

	// clear empties the panel; a player let go of its source stops
	// fetching it at once.
	clear() {
		for (const m of this.body.querySelectorAll("video, audio")) {
			m.pause();
			m.removeAttribute("src");
			m.load();
		}
		this.body.replaceChildren();
	}

	show() {
		this.reading?.abort();
		this.reading = null;
		this.clear();
		const r = this.files[this.at];
		const href = r.tr.querySelector("td.name a").getAttribute("href");
		const url = new URL(href, location.href).href;
		const kind = kindOf(r.name);
		this.el("preview-title").textContent = r.name;
		this.el("preview-count").textContent = `${this.at + 1} of ${this.files.length} · ${formatSize(r.size)}`;
		const dl = this.el("preview-download");
		dl.href = href;
		dl.setAttribute("aria-label", `Download ${r.name}`);
		this.el("preview-prev").disabled = this.at === 0;
		this.el("preview-next").disabled = this.at === this.files.length - 1;
		this.note.textContent = "";
		this.dialog.dataset.kind = kind;
		let el;
		switch (kind) {
			case "image":
				el = document.createElement("img");
				el.alt = r.name;
				el.src = url;
				el.addEventListener("error", () => this.failed("The browser cannot show this image."));
				break;
			case "video":
			case "audio":
				el = document.createElement(kind);
				el.controls = true;
				el.preload = "metadata";
				el.src = url;
				el.setAttribute("aria-label", r.name);
				el.addEventListener("error", () => this.failed(`The browser cannot play this ${kind}: download it to play it elsewhere.`));
				break;
			case "pdf":
				el = document.createElement("iframe");
				el.title = `${r.name} (PDF)`;
				el.src = url;
				break;
			default:
				el = document.createElement("pre");
				el.tabIndex = 0;
				el.setAttribute("aria-label", r.name);
				el.textContent = "Reading…";
				this.readText(el, url, r);
		}
		this.body.replaceChildren(el);
	}

	failed(msg) {
		const p = document.createElement("p");
		p.textContent = msg;
		this.body.replaceChildren(p);
	}

	// readText shows the first TEXT_BYTES of a file as text, and says so
	// when there is more.
	async readText(pre, url, r) {
		const ctl = new AbortController();
		this.reading = ctl;
		try {
			const res = await fetch(url, { headers: { Range: `bytes=0-${TEXT_BYTES - 1}` }, cache: "no-store", signal: ctl.signal });
			if (!res.ok) {
				this.failed(`The file could not be read (${res.status}).`);
				return;
			}
			const bytes = await readAtMost(res, TEXT_BYTES);
			if (ctl.signal.aborted) return;
			if (bytes.subarray(0, 8192).includes(0)) {
				this.failed("This file does not look like text: download it instead.");
				return;
			}
			let text = new TextDecoder("utf-8").decode(bytes);
			const total = totalOf(res, bytes.length);
			if (total > bytes.length) {
				text = text.replace(/\uFFFD$/, ""); // a character cut in two
				this.note.textContent = `Showing the first ${formatSize(bytes.length)} of ${formatSize(total)}: download the file for all of it.`;
			}
			pre.textContent = text;
		} catch (err) {
			if (err.name !== "AbortError") this.failed(`The file could not be read: ${err.message}.`);
		} finally {
			if (this.reading === ctl) this.reading = null;
		}
	}
}

// readAtMost reads at most n bytes of a response's body, and leaves the
// rest unread.
async function readAtMost(res, n) {
	const reader = res.body.getReader();
	const parts = [];
	let got = 0;
	while (got < n) {
		const { done, value } = await reader.read();
		if (done) break;
		parts.push(value);
		got += value.length;
	}
	reader.cancel().catch(() => {});
	const out = new Uint8Array(Math.min(got, n));
	let at = 0;
	for (const p of parts) {
		const take = Math.min(p.length, out.length - at);
		out.set(p.subarray(0, take), at);
		at += take;
	}
	return out;
}

// totalOf is the length of the whole file: from Content-Range on a 206,
// else what came.
function totalOf(res, got) {
	const m = /\/(\d+)$/.exec(res.headers.get("Content-Range") || "");
	if (m) return Number(m[1]);
	const len = Number(res.headers.get("Content-Length"));
	return res.status === 200 && len > 0 ? len : got;
}
