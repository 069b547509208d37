// share.js: the share form of a folder page. It posts the form and shows
// the link the server made; without it, the form posts all the same and
// the browser shows the server's JSON answer.

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
			out.textContent = "";
			const link = document.createElement("a");
			link.href = new URL(url, location.origin).href;
			link.textContent = link.href;
			out.append(link, ` (until ${new Date(expires).toLocaleString()})`);
		} catch (err) {
			out.textContent = `No link: ${err.message}`;
		}
	});
}
