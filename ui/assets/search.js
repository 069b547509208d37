// search.js: finding names below the page's folder. The server walks the
// folder (as the visitor may see it) and streams each match as a line of
// JSON as it finds it, and now and then how far it got; the page shows
// matches as they come. Asking again, or closing the results, stops the
// walk. countBelow asks the same walk for what a folder holds.

import { formatSize } from "./format.js";
import { folderPath } from "./http.js";

const fmt = new Intl.NumberFormat("en");

// plural writes a count of a word: "1 file", "2 files", "3 matches".
function plural(n, word) {
	if (n === 1) return `1 ${word}`;
	return `${fmt.format(n)} ${/(s|x|ch|sh)$/.test(word) ? `${word}es` : `${word}s`}`;
}

// lines reads a response of JSON lines, calling each with every object.
async function lines(res, each) {
	const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
	let rest = "";
	for (;;) {
		const { done, value } = await reader.read();
		if (done) break;
		rest += value;
		let nl = rest.indexOf("\n");
		while (nl >= 0) {
			const line = rest.slice(0, nl);
			rest = rest.slice(nl + 1);
			if (line !== "") each(JSON.parse(line));
			nl = rest.indexOf("\n");
		}
	}
	if (rest.trim() !== "") each(JSON.parse(rest));
}

// countBelow returns what the folder at path (a path below the root,
// with its slashes) holds, as the server's last search line says:
// { files, folders, bytes, skipped }.
export async function countBelow(endpoint, path, signal) {
	const res = await fetch(`${endpoint}?${new URLSearchParams({ path })}`, { cache: "no-store", signal });
	if (!res.ok) throw new Error((await res.text()).trim() || String(res.status));
	let end = null;
	await lines(res, (o) => {
		if (o.done) end = o;
	});
	if (!end || end.error) throw new Error(end?.error || "the count stopped");
	return end;
}

// describeCount writes a folder's count: "1,234 files in 5 folders, 3.2 GiB".
export function describeCount(c) {
	let s = `${plural(c.files, "file")}`;
	if (c.folders > 0) s += ` in ${plural(c.folders + 1, "folder")}`;
	s += `, ${formatSize(c.bytes)}`;
	if (c.skipped > 0) s += `, and ${plural(c.skipped, "folder")} it could not look into`;
	return s;
}

export class Finder {
	constructor(form, endpoint, folder) {
		this.form = form;
		this.endpoint = endpoint;
		this.folder = folder;
		this.el = (id) => document.getElementById(id);
		this.section = this.el("found");
		this.list = this.el("found-list");
		this.status = this.el("found-status");
		this.input = this.el("find-text");
		this.running = null;
	}

	init() {
		this.form.addEventListener("submit", (ev) => {
			ev.preventDefault();
			this.find(this.input.value.trim());
		});
		this.input.addEventListener("keydown", (ev) => {
			if (ev.key === "Escape" && !this.section.hidden) {
				ev.preventDefault();
				this.close();
			}
		});
		this.el("found-close").addEventListener("click", () => {
			this.close();
			this.input.focus();
		});
	}

	close() {
		this.running?.abort();
		this.running = null;
		this.section.hidden = true;
		this.list.replaceChildren();
	}

	async find(text) {
		this.running?.abort();
		if (text === "") {
			this.close();
			return;
		}
		const ctl = new AbortController();
		this.running = ctl;
		this.list.replaceChildren();
		delete this.section.dataset.done;
		this.section.hidden = false;
		this.el("found-title").textContent = `Names with “${text}” below this folder`;
		this.status.textContent = "Searching…";
		let found = 0;
		let end = null;
		try {
			const q = new URLSearchParams({ path: folderPath(this.folder), q: text });
			const res = await fetch(`${this.endpoint}?${q}`, { cache: "no-store", signal: ctl.signal });
			if (!res.ok) {
				this.status.textContent = `The search failed: ${(await res.text()).trim() || res.status}.`;
				return;
			}
			await lines(res, (o) => {
				if (o.done) {
					end = o;
				} else if (o.href !== undefined) {
					found++;
					this.list.append(this.item(o));
					this.list.dataset.count = String(found);
				} else if (o.searched !== undefined) {
					this.status.textContent = `Searching… ${plural(o.searched, "name")} looked at, ${fmt.format(found)} found.`;
				}
			});
		} catch (err) {
			if (err.name === "AbortError") return;
			this.status.textContent = `The search stopped: ${err.message}.`;
			return;
		} finally {
			if (this.running === ctl) this.running = null;
		}
		this.status.textContent = this.summary(found, end);
		this.section.dataset.done = "";
	}

	item(o) {
		const li = document.createElement("li");
		const a = document.createElement("a");
		a.href = o.href;
		a.className = o.dir ? "dir" : "file";
		a.textContent = o.dir ? `${o.name}/` : o.name;
		li.append(a);
		if (!o.dir) {
			const size = document.createElement("span");
			size.className = "size";
			size.textContent = formatSize(o.size);
			li.append(size);
		}
		return li;
	}

	summary(found, end) {
		if (!end) return `The search stopped early: ${fmt.format(found)} found.`;
		let s = `${found === 0 ? "Nothing" : plural(found, "match")} found among ${plural(end.files, "file")} and ${plural(end.folders, "folder")}.`;
		if (end.more) s += ` Only the first ${fmt.format(found)} are shown: search for more of the name to see the rest.`;
		if (end.skipped > 0) s += ` ${plural(end.skipped, "folder")} could not be searched.`;
		if (end.error) s += ` The search stopped: ${end.error}.`;
		return s;
	}
}
