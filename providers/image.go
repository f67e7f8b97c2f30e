package providers

import "strings"

// dataURL splits a base64 data: URL into its media type and data.
func dataURL(url string) (mediaType, data string, ok bool) {
	rest, found := strings.CutPrefix(url, "data:")
	if !found {
		return "", "", false
	}
	meta, data, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	mediaType, enc, _ := strings.Cut(meta, ";")
	if enc != "base64" || mediaType == "" {
		return "", "", false
	}
	return mediaType, data, true
}

// mediaTypeOf guesses an image URL's media type from its extension; ""
// when it cannot tell.
func mediaTypeOf(url string) string {
	u := strings.ToLower(url)
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	switch {
	case strings.HasSuffix(u, ".png"):
		return "image/png"
	case strings.HasSuffix(u, ".jpg"), strings.HasSuffix(u, ".jpeg"):
		return "image/jpeg"
	case strings.HasSuffix(u, ".gif"):
		return "image/gif"
	case strings.HasSuffix(u, ".webp"):
		return "image/webp"
	}
	return ""
}
