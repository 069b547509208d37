// http.js: the page's requests to its own server, and what a failed one
// means, in words. The browser sends the credential its user signed in
// with by itself; nothing here holds one.

// send makes a request and returns { ok, status, reason, res }: reason is
// the server's one-line reason when it refused, or what went wrong on the
// way (status 0) when no answer came.
export async function send(url, { method = "GET", body, headers = {}, signal } = {}) {
	let res;
	try {
		res = await fetch(url, { method, body, headers, signal, cache: "no-store" });
	} catch (err) {
		if (err.name === "AbortError") throw err;
		return { ok: false, status: 0, reason: err.message, res: null };
	}
	if (res.ok) return { ok: true, status: res.status, reason: "", res };
	let reason = "";
	try {
		reason = (await res.text()).trim().split("\n")[0];
	} catch {
		// The reason is lost with the connection; the status is enough.
	}
	return { ok: false, status: res.status, reason, res };
}

// form encodes fields (an object; an array value repeats its field) as
// a URL-encoded body.
export function form(fields) {
	const body = new URLSearchParams();
	for (const [k, v] of Object.entries(fields)) {
		for (const one of Array.isArray(v) ? v : [v]) body.append(k, one);
	}
	return body;
}

// explain writes a failed request r about what ("Delete a.txt") as one
// sentence for the person who asked for it.
export function explain(what, r) {
	const because = r.reason ? `: ${r.reason}` : "";
	switch (r.status) {
		case 0:
			return `${what} failed: the server could not be reached (${r.reason}). Check the connection and try again.`;
		case 401:
			return `${what} failed: you are not signed in. Reload the page, sign in, and try again.`;
		case 403:
			return `${what} is not allowed${because}.`;
		case 404:
			return `${what} failed: it is not there any more (someone may have moved or deleted it).`;
		case 409:
			return `${what} failed${because}.`;
		case 412:
			return `${what} was not done: the file changed after this page listed it, and nothing was lost. The list now shows it as it is: check it and try again.`;
		case 423:
			return `${what} failed: someone else holds a lock on it (a WebDAV client).`;
		case 507:
			return `${what} failed: the server has no room left.`;
	}
	return `${what} failed${because || ` (${r.status})`}.`;
}

// entryURL returns the URL of an entry of the page's folder, from the
// link of its row: the exact name, whatever the page shows of it.
export function entryURL(href) {
	return new URL(href, location.href);
}

// entryPath returns the path of an entry below the server's root (what
// the routes of /_largo/ take), as a URL path not escaped, with a slash
// after a folder's: folder is the page's ("" for the root).
export function entryPath(folder, name, dir) {
	const p = folder === "" ? `/${name}` : `/${folder}/${name}`;
	return dir ? `${p}/` : p;
}

// folderPath is the path of a folder below the server's root, with its
// slashes.
export function folderPath(folder) {
	return folder === "" ? "/" : `/${folder}/`;
}

// signOut makes the page's "Sign out" link (a) sign out where it is: it
// asks the server to refuse the credential the browser holds, which the
// browser then forgets (see pageapi.Logout), and goes on to the page the
// link names.
export function signOut(a) {
	a?.addEventListener("click", async (ev) => {
		ev.preventDefault();
		const link = new URL(a.href);
		try {
			await fetch(link, { cache: "no-store" });
		} catch {
			// Without an answer nothing was forgotten: the server's page,
			// by the link itself, says so.
			location.assign(link);
			return;
		}
		location.assign(link.searchParams.get("logout") || "/");
	});
}
