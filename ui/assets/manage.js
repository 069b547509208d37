// manage.js: the folder page as a file manager. Each row has a menu of
// actions (Shift+F10 or the row's ⋯ button); a selection of rows has a bar
// of actions; the folder has a "New folder" button. Before it offers a
// change, the page asks the server what the visitor may do with those
// names (the access rules decide, through the same gate as the changes
// themselves), and offers only that; whatever the page shows, the server
// decides again when asked.
//
// Every change goes through the server's own operations: DELETE at the
// entry's URL (a folder with ?recursive=1), a move or a rename through the
// move route (one atomic rename on a folder store), a new folder through
// its route. A file is changed only as this page listed it: its ETag goes
// as If-Match, so a file changed meanwhile is left alone and the page says
// so, then shows the folder as it is now. Failures are told in words.

import { formatSize } from "./format.js";
import { entryPath, entryURL, explain, folderPath, form, send } from "./http.js";
import { previewable } from "./preview.js";
import { countBelow, describeCount } from "./search.js";

// MAY_CHUNK is how many names one question to the server asks about.
const MAY_CHUNK = 200;
// CONFIRM_SHOWN is how many entries a confirmation names.
const CONFIRM_SHOWN = 12;

// Mays keeps what the server said the visitor may do with each path.
class Mays {
	constructor(endpoint) {
		this.endpoint = endpoint;
		this.known = new Map();
	}

	// of returns, for each path, the set of actions allowed.
	async of(paths) {
		const missing = [...new Set(paths.filter((p) => !this.known.has(p)))];
		for (let i = 0; i < missing.length; i += MAY_CHUNK) {
			const chunk = missing.slice(i, i + MAY_CHUNK);
			const r = await send(this.endpoint, { method: "POST", body: form({ path: chunk }) });
			const got = r.ok ? await r.res.json() : {};
			for (const p of chunk) this.known.set(p, new Set(got[p] || []));
		}
		return paths.map((p) => this.known.get(p));
	}

	forget() {
		this.known.clear();
	}
}

// hrefOf is the link of a row, relative to the page.
const hrefOf = (r) => r.tr.querySelector("td.name a").getAttribute("href");

// realName is an entry's name as it is stored (the page may show it
// escaped): from its link.
function realName(r) {
	const seg = hrefOf(r).replace(/^\.\//, "").replace(/\/$/, "");
	try {
		return decodeURIComponent(seg);
	} catch {
		return r.name;
	}
}

const label = (r) => (r.dir ? `${r.name}/` : r.name);

function items(n) {
	return n === 1 ? "1 item" : `${n} items`;
}

export class Manager {
	constructor(main, listing, selection, preview, links) {
		this.listing = listing;
		this.selection = selection;
		this.preview = preview;
		this.links = links;
		this.folder = main.dataset.folder || "";
		this.ends = { archive: main.dataset.archive, move: main.dataset.move, mkdir: main.dataset.mkdir, search: main.dataset.search };
		// mays is null on a share link's page, which changes nothing.
		this.mays = main.dataset.may ? new Mays(main.dataset.may) : null;
		this.el = (id) => document.getElementById(id);
		this.menu = this.el("row-menu");
		this.menuFor = null; // { button, r }
		this.problem = this.el("problem");
		this.selWait = 0;
	}

	init() {
		this.listing.table.addEventListener("click", (ev) => {
			const b = ev.target.closest?.(".row-menu");
			const r = b && this.listing.rowOf(b);
			if (r) this.toggleMenu(b, r);
		});
		this.listing.table.addEventListener("keydown", (ev) => this.onKey(ev));
		this.menu.addEventListener("keydown", (ev) => this.onMenuKey(ev));
		document.addEventListener("pointerdown", (ev) => {
			if (this.menuFor && !this.menu.contains(ev.target) && ev.target !== this.menuFor.button) this.closeMenu(false);
		});
		if (!this.mays) return;
		const tools = this.el("tools");
		if (tools) tools.hidden = false;
		this.el("new-folder")?.addEventListener("click", () => this.newFolder());
		for (const b of this.el("selbar").querySelectorAll("button[data-act]")) {
			b.addEventListener("click", () => this.onSelectionAction(b.dataset.act));
		}
		this.el("show-links")?.addEventListener("click", () => this.links.openLinks());
	}

	// onKey answers the keys of a focused row's link.
	onKey(ev) {
		if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
		const r = ev.target instanceof HTMLAnchorElement && this.listing.rowOf(ev.target);
		if (!r) return;
		if ((ev.key === "F10" && ev.shiftKey) || ev.key === "ContextMenu") {
			ev.preventDefault();
			this.openMenu(r.tr.querySelector(".row-menu"), r);
		} else if (ev.shiftKey || !this.mays) {
			// Shift with an arrow extends the selection (select.js); a share
			// link's page changes nothing.
			if (!ev.shiftKey && (ev.key === "p" || ev.key === "P") && previewable(r)) {
				ev.preventDefault();
				this.preview.open(r);
			}
		} else if (ev.key === "Delete") {
			ev.preventDefault();
			const sel = this.selection ? this.selection.entries() : [];
			this.withMay(sel.length > 0 ? sel : [r], "delete", "delete", (es) => this.remove(es));
		} else if (ev.key === "F2") {
			ev.preventDefault();
			this.withMay([r], "rename", "rename", ([one]) => this.rename(one));
		} else if ((ev.key === "p" || ev.key === "P") && previewable(r)) {
			ev.preventDefault();
			this.preview.open(r);
		}
	}

	// withMay runs act on entries when the visitor may do action on all of
	// them, and says so when not.
	async withMay(entries, action, verb, act) {
		const mays = await this.mays.of(entries.map((r) => this.pathOf(r)));
		const refused = entries.filter((_, i) => !mays[i].has(action));
		if (refused.length > 0) {
			this.tell(`You may not ${verb} ${refused.map(label).join(", ")}.`);
			return;
		}
		act(entries);
	}

	pathOf(r) {
		return entryPath(this.folder, realName(r), r.dir);
	}

	// Menus.

	toggleMenu(button, r) {
		if (this.menuFor?.button === button) this.closeMenu(true);
		else this.openMenu(button, r);
	}

	openMenu(button, r) {
		this.closeMenu(false);
		this.menuFor = { button, r };
		button.setAttribute("aria-expanded", "true");
		this.menu.setAttribute("aria-label", `Actions: ${label(r)}`);
		this.menu.replaceChildren();
		const add = (text, key, act, danger) => {
			const b = document.createElement("button");
			b.type = "button";
			b.setAttribute("role", "menuitem");
			b.tabIndex = -1;
			b.textContent = text;
			b.dataset.act = key;
			if (danger) b.classList.add("danger");
			b.addEventListener("click", () => {
				this.closeMenu(true);
				act();
			});
			this.menu.append(b);
			return b;
		};
		const href = hrefOf(r);
		if (r.dir) add("Open", "open", () => location.assign(href));
		if (previewable(r)) add("Preview", "preview", () => this.preview.open(r));
		if (!r.dir) add("Download", "download", () => this.download(href));
		else if (this.ends.archive) add("Download as zip", "zip", () => this.archive([r], "zip"));
		this.menu.hidden = false;
		this.place(button);
		if (!this.mays) {
			this.menu.dataset.ready = "";
			this.menu.querySelector("button")?.focus();
			return;
		}
		const wait = add("Checking what you may do…", "wait", () => {});
		wait.setAttribute("aria-disabled", "true");
		this.place(button);
		this.menu.querySelector("button")?.focus();
		this.mays.of([this.pathOf(r)]).then(([may]) => {
			if (this.menuFor?.button !== button) return;
			wait.remove();
			if (may.has("rename")) add("Rename…", "rename", () => this.rename(r));
			if (may.has("move")) add("Move…", "move", () => this.move([r]));
			if ((may.has("share") || may.has("drop")) && this.links) add("Share…", "share", () => this.links.openShare(label(r), this.pathOf(r), may.has("share"), may.has("drop")));
			if (may.has("delete")) add("Delete…", "delete", () => this.remove([r]), true);
			this.menu.dataset.ready = "";
			this.place(button);
		});
	}

	// place puts the menu under its button, inside the page's width.
	place(button) {
		const b = button.getBoundingClientRect();
		const w = this.menu.offsetWidth;
		const left = Math.max(8, Math.min(b.right - w, document.documentElement.clientWidth - w - 8));
		this.menu.style.left = `${left + scrollX}px`;
		this.menu.style.top = `${b.bottom + scrollY + 4}px`;
	}

	closeMenu(refocus) {
		if (!this.menuFor) return;
		const { button } = this.menuFor;
		this.menuFor = null;
		this.menu.hidden = true;
		delete this.menu.dataset.ready;
		this.menu.replaceChildren();
		button.removeAttribute("aria-expanded");
		if (refocus && button.isConnected) button.focus();
	}

	onMenuKey(ev) {
		const all = Array.from(this.menu.querySelectorAll("button:not([aria-disabled])"));
		const at = all.indexOf(document.activeElement);
		const to = { ArrowDown: at + 1, ArrowUp: at - 1, Home: 0, End: all.length - 1 }[ev.key];
		if (to !== undefined) {
			ev.preventDefault();
			all[(to + all.length) % all.length]?.focus();
		} else if (ev.key === "Escape") {
			ev.preventDefault();
			this.closeMenu(true);
		} else if (ev.key === "Tab") {
			this.closeMenu(false);
		}
	}

	// The selection.

	// selected is told of each change of the selection.
	selected(entries) {
		const bar = this.el("selbar");
		bar.hidden = entries.length === 0;
		if (entries.length === 0) return;
		const dirs = entries.filter((r) => r.dir).length;
		const files = entries.length - dirs;
		const parts = [];
		if (files > 0) parts.push(files === 1 ? "1 file" : `${files} files`);
		if (dirs > 0) parts.push(dirs === 1 ? "1 folder" : `${dirs} folders`);
		this.el("sel-count").textContent = `${parts.join(" and ")} selected`;
		const move = bar.querySelector('[data-act="move"]');
		const del = bar.querySelector('[data-act="delete"]');
		const zip = [bar.querySelector('[data-act="zip"]'), bar.querySelector('[data-act="tar"]')];
		for (const b of zip) b.hidden = !this.ends.archive;
		const ask = ++this.selWait;
		delete bar.dataset.ready;
		this.mays.of(entries.map((r) => this.pathOf(r))).then((mays) => {
			if (ask !== this.selWait) return;
			move.hidden = !mays.every((m) => m.has("move"));
			del.hidden = !mays.every((m) => m.has("delete"));
			bar.dataset.ready = "";
		});
	}

	onSelectionAction(act) {
		const entries = this.selection.entries();
		if (act === "clear") {
			this.selection.clear();
			this.listing.focusName(entries[0]?.name);
		} else if (act === "zip" || act === "tar") {
			this.archive(entries, act);
		} else if (act === "move") {
			this.move(entries);
		} else if (act === "delete") {
			this.remove(entries);
		}
	}

	// Downloads.

	download(href) {
		const a = document.createElement("a");
		a.href = href;
		a.download = "";
		document.body.append(a);
		a.click();
		a.remove();
	}

	// archive downloads entries as one archive: a form posted to the
	// server, whose answer the browser saves (the page stays).
	archive(entries, format) {
		const f = document.createElement("form");
		f.method = "post";
		f.action = this.ends.archive;
		f.hidden = true;
		const field = (name, value) => {
			const i = document.createElement("input");
			i.type = "hidden";
			i.name = name;
			i.value = value;
			f.append(i);
		};
		field("dir", folderPath(this.folder));
		field("format", format);
		for (const r of entries) field("name", realName(r));
		document.body.append(f);
		f.submit();
		f.remove();
		this.say(`Downloading ${entries.length === 1 ? label(entries[0]) : items(entries.length)} as ${format}.`);
	}

	// Changes.

	// remove deletes entries, once confirmed.
	async remove(entries) {
		if (!(await this.confirmDelete(entries))) return;
		const failed = [];
		let done = 0;
		for (const r of entries) {
			const url = entryURL(hrefOf(r));
			if (r.dir) url.search = "recursive=1";
			const headers = !r.dir && r.etag ? { "If-Match": r.etag } : {};
			const res = await send(url, { method: "DELETE", headers });
			if (res.ok) done++;
			else failed.push(explain(`Deleting ${label(r)}`, res));
		}
		await this.after();
		this.report(done, `Deleted ${done === 1 && entries.length === 1 ? label(entries[0]) : items(done)}.`, failed);
	}

	// move moves entries to a folder the visitor picks.
	async move(entries) {
		const target = await this.pickFolder(entries);
		if (target === null) return;
		const failed = [];
		let done = 0;
		for (const r of entries) {
			const headers = !r.dir && r.etag ? { "If-Match": r.etag } : {};
			const to = entryPath(target, realName(r), false);
			const res = await send(this.ends.move, { method: "POST", headers, body: form({ from: this.pathOf(r), to }) });
			if (res.ok) done++;
			else failed.push(explain(`Moving ${label(r)}`, res));
		}
		await this.after();
		const where = folderPath(target);
		this.report(done, `Moved ${done === 1 && entries.length === 1 ? label(entries[0]) : items(done)} to ${where}.`, failed);
	}

	rename(r) {
		const old = realName(r);
		const dot = r.dir ? -1 : old.lastIndexOf(".");
		this.ask({ title: `Rename ${label(r)}`, label: "New name", value: old, ok: "Rename", select: dot > 0 ? dot : old.length }, async (name) => {
			if (name === old) return "";
			const headers = !r.dir && r.etag ? { "If-Match": r.etag } : {};
			const res = await send(this.ends.move, { method: "POST", headers, body: form({ from: this.pathOf(r), to: entryPath(this.folder, name, false) }) });
			if (!res.ok) {
				if (res.status === 412 || res.status === 404) await this.after();
				return explain(`Renaming ${label(r)}`, res);
			}
			await this.after();
			this.say(`Renamed ${label(r)} to ${name}${r.dir ? "/" : ""}.`);
			this.listing.focusName(name);
			return "";
		});
	}

	newFolder() {
		this.ask({ title: "New folder", label: "Name of the new folder", value: "", ok: "Make the folder" }, async (name) => {
			const res = await send(this.ends.mkdir, { method: "POST", body: form({ path: entryPath(this.folder, name, true) }) });
			if (!res.ok) return explain(`Making the folder ${name}`, res);
			await this.after();
			this.say(`Made the folder ${name}/.`);
			this.listing.focusName(name);
			return "";
		});
	}

	// after shows the folder as it is now, once something changed.
	async after() {
		this.mays.forget();
		try {
			await this.listing.refresh();
		} catch (err) {
			this.tell(`The list could not be refreshed (${err.message}): reload the page to see the folder as it is now.`);
		}
	}

	// report tells how a change of several entries went.
	report(done, news, failed) {
		if (done > 0) this.say(news);
		if (failed.length > 0) this.tell(failed.join(" "));
		else this.problem.hidden = true;
	}

	say(text) {
		this.el("news").textContent = text;
	}

	tell(text) {
		this.problem.textContent = text;
		this.problem.hidden = false;
	}

	// Dialogs.

	// confirmDelete asks whether entries may go, naming them, and telling
	// how much each folder holds.
	confirmDelete(entries) {
		const d = this.el("confirm");
		const one = entries.length === 1;
		this.el("confirm-title").textContent = one ? `Delete ${label(entries[0])}?` : `Delete ${items(entries.length)}?`;
		const body = this.el("confirm-body");
		const intro = document.createElement("p");
		intro.textContent = one ? "This cannot be undone:" : "These go, and this cannot be undone:";
		const list = document.createElement("ul");
		list.className = "goes";
		const counts = new AbortController();
		for (const r of entries.slice(0, CONFIRM_SHOWN)) {
			const li = document.createElement("li");
			const what = document.createElement("span");
			what.className = "what";
			li.append(label(r), " ", what);
			if (!r.dir) {
				what.textContent = `(${formatSize(r.size)})`;
			} else if (this.ends.search) {
				what.textContent = "(a folder: counting what it holds…)";
				countBelow(this.ends.search, this.pathOf(r), counts.signal).then(
					(c) => {
						what.textContent = `(a folder with ${describeCount(c)})`;
						li.dataset.counted = "";
					},
					(err) => {
						if (err.name !== "AbortError") what.textContent = "(a folder, with all it holds)";
					},
				);
			} else {
				what.textContent = "(a folder, with all it holds)";
			}
			list.append(li);
		}
		if (entries.length > CONFIRM_SHOWN) {
			const li = document.createElement("li");
			li.textContent = `and ${items(entries.length - CONFIRM_SHOWN)} more`;
			list.append(li);
		}
		body.replaceChildren(intro, list);
		this.el("confirm-ok").textContent = one ? "Delete" : `Delete ${items(entries.length)}`;
		return new Promise((resolve) => {
			d.addEventListener(
				"close",
				() => {
					counts.abort();
					resolve(d.returnValue === "ok");
				},
				{ once: true },
			);
			d.returnValue = "";
			d.showModal();
			d.querySelector('button[value="cancel"]').focus();
		});
	}

	// ask asks for a name; act(name) does what it is for and returns ""
	// or what went wrong, shown while the dialog stays open.
	ask({ title, label: text, value, ok, select }, act) {
		const d = this.el("ask");
		const f = this.el("ask-form");
		const input = this.el("ask-name");
		const err = this.el("ask-error");
		const okButton = this.el("ask-ok");
		this.el("ask-title").textContent = title;
		this.el("ask-label").textContent = text;
		okButton.textContent = ok;
		okButton.disabled = false;
		input.value = value;
		err.textContent = "";
		input.removeAttribute("aria-invalid");
		const onSubmit = async (ev) => {
			if (ev.submitter?.value === "cancel") return;
			ev.preventDefault();
			const name = input.value.trim();
			let msg = "";
			if (name === "" || name === "." || name === "..") msg = "Give a name.";
			else if (name.includes("/")) msg = "A name cannot hold a slash: to put it in another folder, use Move.";
			else if (name.startsWith(".")) msg = "A name cannot start with a dot here: such names are hidden.";
			if (msg === "") {
				okButton.disabled = true;
				msg = await act(name);
				okButton.disabled = false;
			}
			if (msg === "") {
				d.close("ok");
				return;
			}
			err.textContent = msg;
			input.setAttribute("aria-invalid", "true");
			input.focus();
		};
		f.addEventListener("submit", onSubmit);
		d.addEventListener("close", () => f.removeEventListener("submit", onSubmit), { once: true });
		d.showModal();
		input.focus();
		input.setSelectionRange(0, select ?? value.length);
	}

	// pickFolder asks for the folder to move entries to, and returns its
	// name ("" for the root), or null.
	pickFolder(entries) {
		const d = this.el("pick");
		const okButton = this.el("pick-ok");
		const status = this.el("pick-status");
		const moving = new Set(entries.map((r) => this.pathOf(r)));
		this.el("pick-title").textContent = `Move ${entries.length === 1 ? label(entries[0]) : items(entries.length)} to…`;
		let at = this.folder;
		let seq = 0;
		const show = async (name) => {
			at = name;
			const mine = ++seq;
			okButton.disabled = true;
			delete d.dataset.ready;
			status.textContent = "Reading the folder…";
			this.crumbs(name, show);
			const list = this.el("pick-list");
			list.replaceChildren();
			const url = new URL(folderPath(name).split("/").map(encodeURIComponent).join("/"), location.origin);
			url.search = "format=json";
			const [got, [may]] = await Promise.all([send(url), this.mays.of([folderPath(name)])]);
			if (mine !== seq) return;
			if (!got.ok) {
				status.textContent = explain("Reading the folder", got);
				return;
			}
			const listing = await got.res.json();
			const dirs = listing.entries.filter((e) => e.dir && !moving.has(entryPath(name, e.name, true)));
			for (const e of dirs) {
				const li = document.createElement("li");
				const b = document.createElement("button");
				b.type = "button";
				b.textContent = `${e.name}/`;
				b.addEventListener("click", () => show(name === "" ? e.name : `${name}/${e.name}`));
				li.append(b);
				list.append(li);
			}
			if (dirs.length === 0) {
				const li = document.createElement("li");
				li.className = "none";
				li.textContent = "No folder in it.";
				list.append(li);
			}
			const here = name === this.folder;
			okButton.disabled = here || !may.has("write");
			status.textContent = here ? "This is where they are now: choose another folder." : may.has("write") ? `Move to ${folderPath(name)}.` : "You may not put files in this folder.";
			d.dataset.ready = "";
		};
		return new Promise((resolve) => {
			d.addEventListener("close", () => resolve(d.returnValue === "ok" ? at : null), { once: true });
			d.returnValue = "";
			d.showModal();
			show(at).then(() => this.el("pick-list").querySelector("button")?.focus());
		});
	}

	// crumbs writes the way from the root to the folder name, each step a
	// button that goes there.
	crumbs(name, go) {
		const ol = this.el("pick-crumbs");
		ol.replaceChildren();
		const parts = name === "" ? [] : name.split("/");
		const steps = [["Home", ""]];
		parts.forEach((p, i) => steps.push([p, parts.slice(0, i + 1).join("/")]));
		steps.forEach(([text, to], i) => {
			const li = document.createElement("li");
			const b = document.createElement("button");
			b.type = "button";
			b.textContent = text;
			if (i === steps.length - 1) b.setAttribute("aria-current", "location");
			b.addEventListener("click", () => go(to));
			li.append(b);
			ol.append(li);
		});
	}
}
