package serve

// readMethods are the methods the file tree answers without writes.
const readMethods = "GET, HEAD, OPTIONS"
