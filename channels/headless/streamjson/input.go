package streamjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Input line types.
const (
	TypeUser      = "user"
	TypeApproval  = "approval"
	TypeInterrupt = "interrupt"
)

// Decisions of an approval line.
const (
	DecisionAllow  = "allow"
	DecisionAlways = "always"
	DecisionDeny   = "deny"
)

// Input is one parsed input line.
type Input struct {
	Type       string // TypeUser, TypeApproval or TypeInterrupt
	Parts      []Part // TypeUser: the content
	ApprovalID string // TypeApproval
	Decision   string // TypeApproval: DecisionAllow, DecisionAlways or DecisionDeny
	Reason     string // TypeApproval: optional
}

// Part is one piece of a user message: text, or an image.
type Part struct {
	Text string
	MIME string // set for an image
	Data []byte // the image bytes
}

// IsImage reports whether the part is an image.
func (p Part) IsImage() bool { return p.MIME != "" }

// ParseInput parses one input line. Errors say what is wrong, so the caller
// can report them and go on with the next line.
func ParseInput(line []byte) (Input, error) {
	var raw struct {
		Type       string          `json:"type"`
		Content    json.RawMessage `json:"content"`
		ApprovalID string          `json:"approvalId"`
		Decision   string          `json:"decision"`
		Reason     string          `json:"reason"`
	}
	if err := json.Unmarshal(line, &raw); err != nil {
		return Input{}, fmt.Errorf("not a JSON object: %v", err)
	}
	in := Input{Type: raw.Type}
	switch raw.Type {
	case TypeUser:
		parts, err := parseContent(raw.Content)
		if err != nil {
			return Input{}, err
		}
		in.Parts = parts
	case TypeApproval:
		if raw.ApprovalID == "" {
			return Input{}, errors.New(`approval without "approvalId"`)
		}
		switch raw.Decision {
		case DecisionAllow, DecisionAlways, DecisionDeny:
		default:
			return Input{}, fmt.Errorf(`approval "decision" must be allow, always or deny, not %q`, raw.Decision)
		}
		in.ApprovalID, in.Decision, in.Reason = raw.ApprovalID, raw.Decision, raw.Reason
	case TypeInterrupt:
	case "":
		return Input{}, errors.New(`missing "type" (user, approval or interrupt)`)
	default:
		return Input{}, fmt.Errorf("unknown type %q (want user, approval or interrupt)", raw.Type)
	}
	return in, nil
}

// parseContent accepts a string or a list of {"type":"text","text":…} /
// {"type":"image","mime":…,"data":base64} parts.
func parseContent(raw json.RawMessage) ([]Part, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New(`user message without "content"`)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if strings.TrimSpace(s) == "" {
			return nil, errors.New("user message with empty content")
		}
		return []Part{{Text: s}}, nil
	}
	var items []struct {
		Type string `json:"type"`
		Text string `json:"text"`
		MIME string `json:"mime"`
		Data []byte `json:"data"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New(`"content" must be a string or a list of parts`)
	}
	var parts []Part
	for i, it := range items {
		switch it.Type {
		case "text":
			parts = append(parts, Part{Text: it.Text})
		case "image":
			if len(it.Data) == 0 || !strings.HasPrefix(it.MIME, "image/") {
				return nil, fmt.Errorf("content part %d: an image needs \"mime\" (image/…) and base64 \"data\"", i)
			}
			parts = append(parts, Part{MIME: it.MIME, Data: it.Data})
		default:
			return nil, fmt.Errorf("content part %d: unknown type %q (want text or image)", i, it.Type)
		}
	}
	if len(parts) == 0 {
		return nil, errors.New("user message with empty content")
	}
	return parts, nil
}
