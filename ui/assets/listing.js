// listing.js: the folder table, enhanced in place. The server already sent
// it sorted and filtered as the query asked; here sorting and filtering
// happen without a round trip (the URL follows, so a reload or a shared
// link shows the same view), the arrow keys move through the rows, and
// refresh() re-reads the folder's JSON listing after uploads and changes,
// telling whoever asked (onRefresh) once the rows are new.

import { compareKeys, formatSize, formatTime, nameKey } from "./format.js";

const KEYS = ["name", "size", "modified"];
// NO_TIME stands for an entry without a time (a bucket's folder): Go's zero
// time, which the server sorts by too.
const NO_TIME = Date.parse("0001-01-01T00:00:00Z");

// stamp reads a time, or NO_TIME when there is none.
const stamp = (s) => (s ? Date.parse(s) : NO_TIME);
const LABELS = { ascending: "ascending", descending: "descending" };

// defaultDesc mirrors ui.defaultDesc: sizes and times start largest and
// newest first.
const defaultDesc = (key) => key === "size" || key === "modified";

// readView reads the view from the query, as ui.ParseView does.
function readView(search) {
	const q = new URLSearchParams(search);
	let sort = q.get("sort");
	if (!KEYS.includes(sort)) sort = "name";
	const order = q.get("order");
	const desc = order === "desc" ? true : order === "asc" ? false : defaultDesc(sort);
	return { sort, desc, filter: (q.get("q") || "").trim() };
}

// query writes a view as a query string, as ui.View.Query does.
function query(view) {
	const q = new URLSearchParams();
	q.set("sort", view.sort);
	q.set("order", view.desc ? "desc" : "asc");
	if (view.filter) q.set("q", view.filter);
	return `?${q}`;
}

function plural(n, word) {
	return n === 1 ? `1 ${word}` : `${n} ${word}s`;
}

export class Listing {
	constructor(table) {
		this.table = table;
		this.body = table.tBodies[0];
		this.parent = this.body.querySelector("tr.parent");
		this.filterInput = document.getElementById("filter");
		this.summary = document.getElementById("summary");
		this.empty = document.getElementById("empty");
		this.view = readView(location.search);
		this.rows = Array.from(this.body.querySelectorAll("tr[data-name]"), (tr) => ({
			name: tr.dataset.name,
			key: nameKey(tr.dataset.name),
			lower: tr.dataset.name.toLowerCase(),
			dir: tr.hasAttribute("data-dir"),
			size: Number(tr.dataset.size),
			modified: stamp(tr.dataset.modified),
			etag: tr.dataset.etag || "",
			tr,
		}));
		this.sorted = { sort: this.view.sort, desc: this.view.desc }; // as the server sent them
		// picks: the rows have a checkbox (the page manages files).
		this.picks = this.table.querySelector("th.pick") !== null;
		this.refreshed = [];
	}

	// onRefresh calls f after each refresh, once the rows are new.
	onRefresh(f) {
		this.refreshed.push(f);
	}

	// rowOf returns the row of an element inside it, or undefined.
	rowOf(el) {
		const tr = el?.closest?.("tr[data-name]");
		return tr ? this.rows.find((r) => r.tr === tr) : undefined;
	}

	// shown returns the rows shown, in their order.
	shown() {
		return Array.from(this.body.querySelectorAll("tr[data-name]:not([hidden])"), (tr) => this.rowOf(tr));
	}

	// init wires the headers, the filter box and the keys.
	init() {
		for (const a of this.table.querySelectorAll("thead a[data-sort]")) {
			a.addEventListener("click", (ev) => {
				ev.preventDefault();
				const key = a.dataset.sort;
				const desc = this.view.sort === key ? !this.view.desc : defaultDesc(key);
				this.setView({ ...this.view, sort: key, desc });
			});
		}
		this.filterInput.addEventListener("input", () => {
			this.setView({ ...this.view, filter: this.filterInput.value.trim() });
		});
		this.filterInput.addEventListener("keydown", (ev) => {
			if (ev.key === "Escape" && this.filterInput.value !== "") {
				ev.preventDefault();
				this.filterInput.value = "";
				this.setView({ ...this.view, filter: "" });
			} else if (ev.key === "ArrowDown") {
				ev.preventDefault();
				this.focusRow(0);
			}
		});
		this.filterInput.form.addEventListener("submit", (ev) => ev.preventDefault());
		this.table.addEventListener("keydown", (ev) => this.onTableKey(ev));
		document.addEventListener("keydown", (ev) => this.onPageKey(ev));
	}

	// links returns the visible row links, the parent's first.
	links() {
		return Array.from(this.body.querySelectorAll("tr:not([hidden]) td.name a"));
	}

	focusRow(i) {
		const links = this.links();
		if (links.length === 0) return;
		links[Math.max(0, Math.min(i, links.length - 1))].focus();
	}

	onTableKey(ev) {
		if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
		const links = this.links();
		const at = links.indexOf(document.activeElement);
		if (at < 0) return;
		const moves = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: links.length - 1, PageDown: at + 10, PageUp: at - 10 };
		if (ev.key in moves) {
			ev.preventDefault();
			if (ev.key === "ArrowUp" && at === 0) {
				this.filterInput.focus();
				return;
			}
			this.focusRow(moves[ev.key]);
		}
	}

	onPageKey(ev) {
		if (ev.altKey || ev.ctrlKey || ev.metaKey || ev.defaultPrevented) return;
		const t = ev.target;
		if (t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLButtonElement || t.isContentEditable) return;
		if (this.table.contains(t) && ev.key !== "/" && ev.key !== "Backspace") return;
		if (ev.key === "/") {
			ev.preventDefault();
			this.filterInput.focus();
			this.filterInput.select();
		} else if (ev.key === "ArrowDown") {
			ev.preventDefault();
			this.focusRow(0);
		} else if (ev.key === "Backspace" && this.parent) {
			ev.preventDefault();
			location.href = "../";
		}
	}

	// setView applies a view and records it in the URL.
	setView(view) {
		this.view = view;
		this.apply();
		const url = new URL(location.href);
		url.search = query(view);
		history.replaceState(null, "", url);
	}

	// apply sorts (when the order changed) and filters the rows, and
	// updates the headers, the hidden form fields and the summary.
	apply() {
		const { sort, desc, filter } = this.view;
		if (this.sorted === null || this.sorted.sort !== sort || this.sorted.desc !== desc) {
			const sign = desc ? -1 : 1;
			this.rows.sort((a, b) => {
				if (a.dir !== b.dir) return a.dir ? -1 : 1;
				let c = 0;
				if (sort === "size") c = a.size - b.size;
				else if (sort === "modified") c = a.modified - b.modified;
				else c = compareKeys(a.key, b.key);
				c = Math.sign(c) * sign;
				// Ties read by name, whatever the direction.
				return c !== 0 ? c : compareKeys(a.key, b.key);
			});
			this.body.append(...this.rows.map((r) => r.tr));
			this.sorted = { sort, desc };
		}
		const f = filter.toLowerCase();
		let dirs = 0;
		let files = 0;
		let bytes = 0;
		let shown = 0;
		for (const r of this.rows) {
			const show = f === "" || r.lower.includes(f);
			if (r.tr.hidden === show) r.tr.hidden = !show;
			if (show) {
				shown++;
				if (r.dir) dirs++;
				else {
					files++;
					bytes += r.size;
				}
			}
		}
		for (const th of this.table.tHead.rows[0].cells) {
			const a = th.querySelector("a[data-sort]");
			if (!a) continue; // the columns of the checkboxes and the menus
			const key = a.dataset.sort;
			if (key === sort) th.setAttribute("aria-sort", desc ? LABELS.descending : LABELS.ascending);
			else th.removeAttribute("aria-sort");
			const next = { sort: key, desc: key === sort ? !desc : defaultDesc(key), filter };
			a.href = query(next);
		}
		const form = this.filterInput.form;
		form.elements.sort.value = sort;
		form.elements.order.value = desc ? "desc" : "asc";
		if (this.filterInput.value.trim() !== filter) this.filterInput.value = filter;
		let text = `${plural(dirs, "folder")}, ${plural(files, "file")}, ${formatSize(bytes)}`;
		if (shown < this.rows.length) text += ` (${shown} of ${this.rows.length} shown)`;
		this.summary.textContent = text;
		this.empty.hidden = shown > 0;
		this.empty.textContent = this.rows.length === 0 ? "This folder is empty." : "No name matches the filter.";
	}

	// refresh re-reads the folder from its JSON listing and re-renders the
	// rows, keeping the view and, where it can, the focused row.
	async refresh() {
		const res = await fetch(`${location.pathname}?format=json`, { headers: { Accept: "application/json" }, cache: "no-store" });
		if (!res.ok) throw new Error(`listing: ${res.status}`);
		const listing = await res.json();
		const focused = document.activeElement?.closest?.("tr[data-name]")?.dataset.name;
		for (const r of this.rows) r.tr.remove();
		this.rows = listing.entries.map((e) => {
			const r = { name: e.name, key: nameKey(e.name), lower: e.name.toLowerCase(), dir: e.dir, size: e.size, modified: stamp(e.modified), etag: e.etag || "" };
			r.tr = row(r, e.modified ? new Date(e.modified) : null, this.picks, e.expires ? new Date(e.expires) : null);
			return r;
		});
		this.sorted = null;
		this.apply();
		for (const f of this.refreshed) f();
		if (focused !== undefined) {
			this.rows.find((r) => r.name === focused)?.tr.querySelector("td.name a").focus();
		}
	}

	// focusName focuses the link of the row named name, if shown.
	focusName(name) {
		const r = this.rows.find((r) => r.name === name && !r.tr.hidden);
		r?.tr.querySelector("td.name a").focus();
		return r !== undefined;
	}
}

// row builds a table row like the server's; modified is a Date or null;
// picks adds the checkbox that selects it; expires, a Date or null, is
// when the file will be removed.
function row(r, modified, picks, expires) {
	const tr = document.createElement("tr");
	tr.dataset.name = r.name;
	tr.dataset.size = String(r.size);
	const iso = modified ? modified.toISOString().replace(/\.\d{3}Z$/, "Z") : "";
	tr.dataset.modified = iso;
	if (r.etag && !r.dir) tr.dataset.etag = r.etag;
	if (r.dir) tr.setAttribute("data-dir", "");
	if (picks) {
		const pick = tr.insertCell();
		pick.className = "pick";
		const box = document.createElement("input");
		box.type = "checkbox";
		box.setAttribute("aria-label", `Select ${r.name}`);
		pick.append(box);
	}
	const name = tr.insertCell();
	name.className = "name";
	const a = document.createElement("a");
	a.className = r.dir ? "dir" : "file";
	a.href = `./${r.name.split("/").map(encodeURIComponent).join("/")}${r.dir ? "/" : ""}`;
	a.textContent = r.dir ? `${r.name}/` : r.name;
	name.append(a);
	if (expires && !r.dir) {
		const small = document.createElement("small");
		small.className = "exp";
		const time = document.createElement("time");
		time.dateTime = expires.toISOString().replace(/\.\d{3}Z$/, "Z");
		time.textContent = `${formatTime(expires)} UTC`;
		small.append("expires ", time);
		name.append(" ", small);
	}
	const size = tr.insertCell();
	size.className = "size";
	size.textContent = r.dir ? "" : formatSize(r.size);
	const mod = tr.insertCell();
	mod.className = "mod";
	if (modified) {
		const time = document.createElement("time");
		time.dateTime = iso;
		time.textContent = formatTime(modified);
		mod.append(time);
	}
	const act = tr.insertCell();
	act.className = "act";
	const menu = document.createElement("button");
	menu.type = "button";
	menu.className = "row-menu";
	menu.setAttribute("aria-haspopup", "menu");
	menu.setAttribute("aria-label", `Actions: ${r.name}`);
	menu.textContent = "⋯";
	act.append(menu);
	return tr;
}
