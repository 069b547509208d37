// select.js: the selection of a folder page's rows. Each row has a
// checkbox; a click with Shift held selects (or clears) every shown row
// from the last one clicked; the box in the header selects all the rows
// shown. From the keyboard, Space selects the focused row and Shift with
// an arrow key selects on, row by row. The selection is kept by name, so
// it survives a re-sort, a filter and a refresh of the listing (where a
// name that went away leaves it).

export class Selection {
	constructor(listing, onChange) {
		this.listing = listing;
		this.onChange = onChange;
		this.names = new Set();
		this.anchor = null; // the name of the row last clicked
		this.all = document.getElementById("pick-all");
	}

	init() {
		const body = this.listing.body;
		body.addEventListener("click", (ev) => {
			const box = ev.target;
			if (!(box instanceof HTMLInputElement) || box.type !== "checkbox") return;
			const r = this.listing.rowOf(box);
			if (!r) return;
			if (ev.shiftKey && this.anchor !== null) this.range(this.anchor, r.name, box.checked);
			else this.set(r, box.checked);
			this.anchor = r.name;
			this.changed();
		});
		this.all.addEventListener("change", () => {
			for (const r of this.listing.shown()) this.set(r, this.all.checked);
			this.changed();
		});
		this.listing.table.addEventListener("keydown", (ev) => this.onKey(ev));
		this.listing.onRefresh(() => this.sync());
	}

	// onKey selects from the keyboard; it runs after the listing's own
	// handler has moved the focus for an arrow key.
	onKey(ev) {
		if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
		const link = ev.target;
		if (!(link instanceof HTMLAnchorElement)) return;
		const r = this.listing.rowOf(link);
		if (!r) return;
		if (ev.key === " ") {
			ev.preventDefault();
			this.set(r, !this.names.has(r.name));
			this.anchor = r.name;
			this.changed();
		} else if (ev.shiftKey && (ev.key === "ArrowDown" || ev.key === "ArrowUp")) {
			const to = this.listing.rowOf(document.activeElement);
			this.set(r, true);
			if (to) this.set(to, true);
			this.changed();
		}
	}

	// set selects or clears one row.
	set(r, on) {
		if (on) this.names.add(r.name);
		else this.names.delete(r.name);
		r.tr.classList.toggle("selected", on);
		const box = r.tr.querySelector("td.pick input");
		if (box) box.checked = on;
	}

	// range selects or clears the shown rows from one name to another.
	range(from, to, on) {
		const shown = this.listing.shown();
		let i = shown.findIndex((r) => r.name === from);
		const j = shown.findIndex((r) => r.name === to);
		if (i < 0) i = j;
		for (let k = Math.min(i, j); k <= Math.max(i, j); k++) this.set(shown[k], on);
	}

	// entries returns the selected rows, in the order shown.
	entries() {
		return this.listing.rows.filter((r) => this.names.has(r.name)).sort((a, b) => rowIndex(a) - rowIndex(b));
	}

	clear() {
		for (const r of this.listing.rows) if (this.names.has(r.name)) this.set(r, false);
		this.names.clear();
		this.changed();
	}

	// sync applies the selection to rows made anew, and forgets the names
	// that went away.
	sync() {
		const present = new Set();
		for (const r of this.listing.rows) {
			if (this.names.has(r.name)) {
				present.add(r.name);
				this.set(r, true);
			}
		}
		this.names = present;
		this.changed();
	}

	changed() {
		const shown = this.listing.shown();
		const picked = shown.filter((r) => this.names.has(r.name)).length;
		this.all.checked = shown.length > 0 && picked === shown.length;
		this.all.indeterminate = picked > 0 && picked < shown.length;
		this.onChange(this.entries());
	}
}

function rowIndex(r) {
	return r.tr.sectionRowIndex;
}
