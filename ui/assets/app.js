// app.js: the entry module of a folder page. The page works without it;
// with it, the table sorts and filters in place and answers the arrow
// keys, files have previews, and, where the server offers them (the page
// says so in data attributes of its main element), the upload area, the
// file manager (selection, moves, renames, removals, new folders), share
// links and the search below the folder appear.

import { Listing } from "./listing.js";
import { Uploader } from "./upload.js";
import { shareForm } from "./share.js";
import { Preview } from "./preview.js";
import { Selection } from "./select.js";
import { Manager } from "./manage.js";
import { Finder } from "./search.js";
import { Links } from "./links.js";
import { signOut } from "./http.js";

document.documentElement.classList.add("js");
signOut(document.getElementById("sign-out"));
const main = document.getElementById("main");
const listing = new Listing(document.getElementById("files"));
listing.init();
const preview = new Preview(listing);
preview.init();
const section = document.getElementById("upload");
if (section) new Uploader(section, listing).init();
const share = document.getElementById("share-form");
if (share) shareForm(share, document.getElementById("share-link"));

if (main.dataset.may !== undefined) {
	const d = main.dataset;
	let links = null;
	if (d.share && d.links) {
		links = new Links(d.share, d.links);
		links.init();
	}
	let manager = null;
	const selection = new Selection(listing, (entries) => manager?.selected(entries));
	manager = new Manager(main, listing, selection, preview, links);
	selection.init();
	manager.init();
	const find = document.getElementById("find");
	if (find && d.search) new Finder(find, d.search, d.folder || "").init();
} else {
	// A share link's page: previews and downloads, from each row's menu.
	new Manager(main, listing, null, preview, null).init();
}
