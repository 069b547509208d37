// app.js: the entry module of a folder page. The page works without it;
// with it, the table sorts and filters in place and answers the arrow
// keys, and, where the visitor may write, the upload area appears.

import { Listing } from "./listing.js";
import { Uploader } from "./upload.js";
import { shareForm } from "./share.js";

document.documentElement.classList.add("js");
const listing = new Listing(document.getElementById("files"));
listing.init();
const section = document.getElementById("upload");
if (section) new Uploader(section, listing).init();
const share = document.getElementById("share-form");
if (share) shareForm(share, document.getElementById("share-link"));
