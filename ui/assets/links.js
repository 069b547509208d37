// links.js: share links from the page. The share dialog makes a link to
// one entry (a file, or a folder; a folder where the visitor may write
// can be a drop box, with a cap on the size of each file); the links
// dialog lists the links the visitor made, newest first, and extends or
// revokes them. The server decides what may be shared: a link grants
// only what its maker may still do.

import { formatTime } from "./format.js";
import { explain, form, send } from "./http.js";
import { shareForm } from "./share.js";

const KIND = { file: "file", folder: "folder", drop: "drop box" };

// WEEK is how long "Extend" makes a link work from now.
const WEEK = "168h";

export class Links {
	constructor(shareEndpoint, linksEndpoint) {
		this.el = (id) => document.getElementById(id);
		this.endpoint = linksEndpoint;
		this.share = this.el("share-dialog");
		this.form = this.el("share-entry");
		this.form.action = shareEndpoint;
		this.out = this.el("entry-link");
		this.list = this.el("links-dialog");
		this.rows = this.el("links-table").tBodies[0];
		this.status = this.el("links-status");
	}

	init() {
		shareForm(this.form, this.out);
		const write = this.el("entry-write");
		const max = this.el("entry-max");
		const ttl = this.el("entry-ttl");
		write.addEventListener("change", () => {
			max.disabled = !write.checked;
			ttl.disabled = !write.checked;
		});
		this.el("share-close").addEventListener("click", () => this.share.close());
		this.el("links-close").addEventListener("click", () => this.list.close());
	}

	// openShare offers a link to the entry at path (a path below the
	// root; a folder's ends with a slash), named name: one that reads it
	// (read), or a drop box (drop), or either.
	openShare(name, path, read, drop) {
		this.form.reset();
		this.form.elements.path.value = path;
		this.el("share-title").textContent = `Share ${name}`;
		this.el("entry-drop").hidden = !drop;
		// Who may write here but not read may make a drop box, and only
		// that (the server refuses anything else).
		this.el("entry-write").checked = !read;
		this.el("entry-max").disabled = read;
		this.el("entry-ttl").disabled = read;
		// A download limit is counted on a link to a file only.
		const file = !path.endsWith("/");
		this.el("entry-file").hidden = !file;
		this.el("entry-downloads").disabled = !file;
		this.out.textContent = "";
		this.share.showModal();
		this.el("entry-expires").focus();
	}

	// openLinks lists the visitor's links.
	async openLinks() {
		this.rows.replaceChildren();
		this.status.textContent = "Reading your links…";
		if (!this.list.open) this.list.showModal();
		const r = await send(this.endpoint);
		if (!r.ok) {
			this.status.textContent = explain("Reading your links", r);
			return;
		}
		const links = await r.res.json();
		this.status.textContent = links.length === 0 ? "You have made no share link." : `${links.length === 1 ? "1 link" : `${links.length} links`}, newest first.`;
		for (const l of links) this.rows.append(this.row(l));
		this.el("links-close").focus();
	}

	row(l) {
		const tr = document.createElement("tr");
		tr.dataset.id = l.id;
		const path = tr.insertCell();
		const a = document.createElement("a");
		a.href = new URL(l.url, location.origin).href;
		a.textContent = l.path;
		path.append(a);
		let kind = KIND[l.kind] || l.kind;
		if (l.max_downloads) kind += ` (${l.downloads || 0} of ${l.max_downloads} downloads)`;
		if (l.file_ttl) kind += ` (files removed after ${l.file_ttl})`;
		tr.insertCell().textContent = kind;
		const when = tr.insertCell();
		this.setExpiry(when, l);
		const acts = tr.insertCell();
		const extend = button("Extend", `Make the link to ${l.path} work for a week from now`);
		const revoke = button("Revoke", `Revoke the link to ${l.path}`);
		revoke.classList.add("danger");
		extend.addEventListener("click", async () => {
			const r = await send(this.endpoint + encodeURIComponent(l.id), { method: "POST", body: form({ expires: WEEK }) });
			if (!r.ok) {
				this.status.textContent = explain(`Extending the link to ${l.path}`, r);
				return;
			}
			const changed = await r.res.json();
			this.setExpiry(when, changed);
			this.status.textContent = `The link to ${l.path} works until ${formatTime(new Date(changed.expires))} UTC.`;
		});
		revoke.addEventListener("click", async () => {
			const r = await send(this.endpoint + encodeURIComponent(l.id), { method: "DELETE" });
			if (!r.ok) {
				this.status.textContent = explain(`Revoking the link to ${l.path}`, r);
				return;
			}
			tr.remove();
			this.status.textContent = `The link to ${l.path} is revoked: it works no more.`;
			this.el("links-close").focus();
		});
		acts.append(extend, " ", revoke);
		return tr;
	}

	setExpiry(td, l) {
		const until = `${formatTime(new Date(l.expires))} UTC`;
		td.textContent = l.expired ? `expired ${until}` : until;
		td.classList.toggle("expired", !!l.expired);
	}
}

function button(text, label) {
	const b = document.createElement("button");
	b.type = "button";
	b.className = "button small";
	b.textContent = text;
	b.setAttribute("aria-label", label);
	return b;
}
