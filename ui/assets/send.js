// send.js: the entry module of an upload page: a drop box's, or a
// folder's its visitor may write in and not see. The page works without
// it, as a form that posts the files to the folder; with it, the form
// gives way to the folder page's uploader (resumable tus uploads, large
// files in pieces over several connections, progress, pause), and the
// page lists what this browser sent here, which it keeps in its own
// storage (localStorage, under the page's key): the server shows nothing
// of the folder.

import { Uploader } from "./upload.js";
import { formatSize, formatTime } from "./format.js";
import { signOut } from "./http.js";

const SENT_PREFIX = "largo.sent ";
// MAX_SENT bounds the list kept for one page.
const MAX_SENT = 200;

// Sent is the list of files this browser sent from one page, newest
// first. It works, emptily, where storage is refused.
class Sent {
	constructor(key) {
		this.key = SENT_PREFIX + key;
		this.list = document.getElementById("sent-list");
		this.none = document.getElementById("sent-none");
		this.forget = document.getElementById("sent-forget");
	}

	init() {
		this.forget.addEventListener("click", () => {
			try {
				localStorage.removeItem(this.key);
			} catch {
				// Nothing kept, nothing to forget.
			}
			this.show();
		});
		this.show();
	}

	read() {
		try {
			const v = JSON.parse(localStorage.getItem(this.key));
			return Array.isArray(v) ? v : [];
		} catch {
			return [];
		}
	}

	add(name, size) {
		const all = [{ name, size, at: Date.now() }, ...this.read()].slice(0, MAX_SENT);
		try {
			localStorage.setItem(this.key, JSON.stringify(all));
		} catch {
			// Without storage the list lives as long as the page.
		}
		this.show(all);
	}

	show(all = this.read()) {
		this.list.replaceChildren(
			...all.map((s) => {
				const li = document.createElement("li");
				const name = document.createElement("span");
				name.className = "sent-name";
				name.textContent = s.name;
				const meta = document.createElement("span");
				meta.className = "sent-size";
				meta.textContent = `${formatSize(s.size)}, ${formatTime(new Date(s.at))} UTC`;
				li.append(name, " ", meta);
				return li;
			}),
		);
		this.none.hidden = all.length > 0;
		this.forget.hidden = all.length === 0;
	}
}

document.documentElement.classList.add("js");
signOut(document.getElementById("sign-out"));
const main = document.getElementById("main");
const sent = new Sent(main.dataset.sent || "");
sent.init();
const section = document.getElementById("upload");
if (section) {
	document.getElementById("send-form").hidden = true;
	new Uploader(section, null, { onDone: (job) => sent.add(job.label, job.file.size) }).init();
}
