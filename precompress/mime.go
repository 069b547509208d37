package precompress

import (
	"mime"
	"path"
	"strings"
)

// extType is the default Config.MediaType: the mime package's table.
func extType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if ext == "" {
		return ""
	}
	return mime.TypeByExtension(ext)
}
