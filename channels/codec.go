package channels

import (
	"encoding/json"
	"fmt"
)

// EncodeMessage is the durable form of a Message (outbox bodies): JSON with
// each part tagged by its type. DecodeMessage reverses it; the pair is
// stable across versions (unknown part types are an error, never dropped
// silently).
func EncodeMessage(m Message) ([]byte, error) {
	w := wireMessage{ReplyTo: m.ReplyTo, Turn: m.Turn, Key: m.Key}
	for _, p := range m.Parts {
		var wp wirePart
		switch p := p.(type) {
		case Text:
			wp = wirePart{Type: "text", Text: p.Markdown}
		case Reasoning:
			wp = wirePart{Type: "reasoning", Text: p.Text}
		case Notice:
			wp = wirePart{Type: "notice", Text: p.Text}
		case ToolActivity:
			t := p
			wp = wirePart{Type: "tool", Tool: &t}
		case Plan:
			pl := p
			wp = wirePart{Type: "plan", Plan: &pl}
		case Buttons:
			b := p
			wp = wirePart{Type: "buttons", Buttons: &b}
		case Attachment:
			a := p
			wp = wirePart{Type: "attachment", Attachment: &a}
		case nil:
			return nil, fmt.Errorf("encode message: nil part")
		default:
			return nil, fmt.Errorf("encode message: unknown part %T", p)
		}
		w.Parts = append(w.Parts, wp)
	}
	return json.Marshal(w)
}

// DecodeMessage parses what EncodeMessage wrote.
func DecodeMessage(b []byte) (Message, error) {
	var w wireMessage
	if err := json.Unmarshal(b, &w); err != nil {
		return Message{}, fmt.Errorf("decode message: %w", err)
	}
	m := Message{ReplyTo: w.ReplyTo, Turn: w.Turn, Key: w.Key}
	for i, p := range w.Parts {
		var part Part
		switch {
		case p.Type == "text":
			part = Text{Markdown: p.Text}
		case p.Type == "reasoning":
			part = Reasoning{Text: p.Text}
		case p.Type == "notice":
			part = Notice{Text: p.Text}
		case p.Type == "tool" && p.Tool != nil:
			part = *p.Tool
		case p.Type == "plan" && p.Plan != nil:
			part = *p.Plan
		case p.Type == "buttons" && p.Buttons != nil:
			part = *p.Buttons
		case p.Type == "attachment" && p.Attachment != nil:
			part = *p.Attachment
		default:
			return Message{}, fmt.Errorf("decode message: part %d has unknown type %q", i, p.Type)
		}
		m.Parts = append(m.Parts, part)
	}
	return m, nil
}

type wireMessage struct {
	Parts   []wirePart `json:"parts,omitempty"`
	ReplyTo string     `json:"replyTo,omitempty"`
	Turn    string     `json:"turn,omitempty"`
	Key     string     `json:"key,omitempty"`
}

type wirePart struct {
	Type       string        `json:"type"`
	Text       string        `json:"text,omitempty"`
	Tool       *ToolActivity `json:"tool,omitempty"`
	Plan       *Plan         `json:"plan,omitempty"`
	Buttons    *Buttons      `json:"buttons,omitempty"`
	Attachment *Attachment   `json:"attachment,omitempty"`
}
