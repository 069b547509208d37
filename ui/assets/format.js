// format.js: how the page writes sizes, times, rates and durations, and
// how it orders names. Each mirrors the server's Go code (largo.FormatSize,
// ui.FormatTime, ui.CompareNames), so a table the browser re-sorts or
// re-renders reads exactly like the one the server sent.

const UNITS = "KMGTPE";

// formatSize writes a byte count as the server does: "999 B", "1.5 KiB",
// "10 GiB" (one decimal, rounded half to even, ".0" dropped).
export function formatSize(n) {
	if (n < 1024 && n > -1024) return `${n} B`;
	let v = n;
	let i = -1;
	while (Math.abs(v) >= 1024 && i < UNITS.length - 1) {
		v /= 1024;
		i++;
	}
	const t = v * 10;
	let r = Math.floor(t);
	const frac = t - r;
	if (frac > 0.5 || (frac === 0.5 && r % 2 !== 0)) r++;
	let s = (r / 10).toFixed(1);
	if (s.endsWith(".0")) s = s.slice(0, -2);
	return `${s} ${UNITS[i]}iB`;
}

// formatTime writes a time as "2006-01-02 15:04", in UTC.
export function formatTime(date) {
	const p = (n) => String(n).padStart(2, "0");
	return `${date.getUTCFullYear()}-${p(date.getUTCMonth() + 1)}-${p(date.getUTCDate())} ${p(date.getUTCHours())}:${p(date.getUTCMinutes())}`;
}

// formatRate writes bytes per second.
export function formatRate(bps) {
	return `${formatSize(Math.round(bps))}/s`;
}

// formatDuration writes seconds as "42 s", "3 min 05 s" or "2 h 07 min".
export function formatDuration(s) {
	if (!Number.isFinite(s) || s < 0) return "";
	s = Math.round(s);
	if (s < 60) return `${s} s`;
	const p = (n) => String(n).padStart(2, "0");
	if (s < 3600) return `${Math.floor(s / 60)} min ${p(s % 60)} s`;
	return `${Math.floor(s / 3600)} h ${p(Math.floor((s % 3600) / 60))} min`;
}

const isDigit = (c) => c >= 48 && c <= 57;

function compareArrays(a, b) {
	const n = Math.min(a.length, b.length);
	for (let i = 0; i < n; i++) {
		if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
	}
	return a.length === b.length ? 0 : a.length < b.length ? -1 : 1;
}

// nameKey prepares a name for compareKeys: its code points, and the same
// folded to lower case. A table keeps one per row, so sorting thousands
// of rows does not take names apart at every comparison.
export function nameKey(s) {
	const cps = Array.from(s, (ch) => ch.codePointAt(0));
	const lower = cps.map((cp) => (cp < 128 ? (cp >= 65 && cp <= 90 ? cp + 32 : cp) : String.fromCodePoint(cp).toLowerCase().codePointAt(0)));
	return { cps, lower };
}

// compareKeys orders two nameKeys as compareNames orders their names.
export function compareKeys(ka, kb) {
	const a = ka.cps;
	const b = kb.cps;
	let i = 0;
	let j = 0;
	while (i < a.length && j < b.length) {
		if (isDigit(a[i]) && isDigit(b[j])) {
			let ei = i;
			while (ei < a.length && isDigit(a[ei])) ei++;
			let ej = j;
			while (ej < b.length && isDigit(b[ej])) ej++;
			let si = i;
			while (si < ei && a[si] === 48) si++;
			let sj = j;
			while (sj < ej && b[sj] === 48) sj++;
			if (ei - si !== ej - sj) return ei - si < ej - sj ? -1 : 1;
			for (; si < ei; si++, sj++) {
				if (a[si] !== b[sj]) return a[si] < b[sj] ? -1 : 1;
			}
			i = ei;
			j = ej;
			continue;
		}
		const la = ka.lower[i];
		const lb = kb.lower[j];
		if (la !== lb) return la < lb ? -1 : 1;
		i++;
		j++;
	}
	if (i < a.length) return 1;
	if (j < b.length) return -1;
	return compareArrays(a, b);
}

// compareNames orders names as people expect: letters regardless of case,
// runs of digits by value ("file2" before "file10"), ties by code point.
export function compareNames(x, y) {
	return compareKeys(nameKey(x), nameKey(y));
}
