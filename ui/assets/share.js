// share.js: the share forms of a folder page ("Share this folder", and
// the dialog of an entry's "Share…"). It posts the form and shows the
// link the server made in a box of its own width, with a button that
// copies it, and when it stops working (UTC, as the page's times are);
// without it, the form posts all the same and the browser shows the
// server's JSON answer.

import { formatTime } from "./format.js";

export function shareForm(form, out) {
	form.addEventListener("submit", async (ev) => {
		ev.preventDefault();
		out.textContent = "Making a link...";
		try {
			const res = await fetch(form.action, {
				method: "POST",
				body: new URLSearchParams(new FormData(form)),
				cache: "no-store",
			});
			if (!res.ok) {
				out.textContent = `No link: ${(await res.text()).trim()}`;
				return;
			}
			const { url, expires } = await res.json();
			showLink(out, new URL(url, location.origin).href, new Date(expires));
		} catch (err) {
			out.textContent = `No link: ${err.message}`;
		}
	});
}

// showLink writes into out the link made, a button that copies it, and
// when it stops working.
function showLink(out, href, until) {
	const box = document.createElement("input");
	box.type = "text";
	box.readOnly = true;
	box.className = "made-url";
	box.value = href;
	box.setAttribute("aria-label", "The link");
	box.addEventListener("focus", () => box.select());
	const copy = document.createElement("button");
	copy.type = "button";
	copy.className = "button made-copy";
	copy.textContent = "Copy";
	const said = document.createElement("span");
	said.className = "made-said";
	said.setAttribute("role", "status");
	copy.addEventListener("click", async () => {
		said.textContent = (await copyText(box)) ? "Copied." : "Select the link and copy it.";
	});
	const row = document.createElement("span");
	row.className = "made-row";
	row.append(box, copy);
	const when = document.createElement("span");
	when.className = "made-until";
	when.textContent = `Works until ${formatTime(until)} UTC. `;
	when.append(said);
	out.replaceChildren(row, when);
	box.focus();
}

// copyText copies the text of box to the clipboard, and reports whether
// it could: the Clipboard API where the page may use it (a secure
// context), else the older command on the selected text.
async function copyText(box) {
	try {
		await navigator.clipboard.writeText(box.value);
		return true;
	} catch {
		box.select();
		try {
			return document.execCommand("copy");
		} catch {
			return false;
		}
	}
}
