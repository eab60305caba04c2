package acp

import (
	"encoding/base64"
	"strings"

	"github.com/switchboard-gw/switchboard/channels"
)

// Protocol-neutral helpers of the mappings.

func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
}

func mimeOr(m, def string) string {
	if m = strings.TrimSpace(m); m == "" {
		return def
	}
	return m
}

func imageExt(mime string) string {
	switch mime {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "image/gif":
		return ".gif"
	case "image/webp":
		return ".webp"
	}
	return ""
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }

func titleOr(t, def string) string {
	if strings.TrimSpace(t) == "" {
		return def
	}
	return t
}

func taskStatus(s string) string {
	switch s {
	case "done":
		return channels.StatusDone
	case "failed", "cancelled":
		return channels.StatusError
	case "waiting":
		return channels.StatusPending
	}
	return channels.StatusRunning
}
