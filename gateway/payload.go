package gateway

import (
	"encoding/json"
	"fmt"
)

// messagePayload is the body of an ItemMessage, an ItemNotification and an
// ItemCommand: what the person wrote, who they are and where they wrote it.
type messagePayload struct {
	EventID     string           `json:"eventId"`
	MessageID   string           `json:"messageId,omitempty"` // the platform's id, to thread the reply
	Text        string           `json:"text"`
	Who         string           `json:"who"` // qualified id
	UserID      string           `json:"userId,omitempty"`
	Name        string           `json:"name,omitempty"`
	Origin      string           `json:"origin,omitempty"`
	Admin       bool             `json:"admin,omitempty"` // commands: the sender is an admin
	Task        string           `json:"task,omitempty"`  // notifications: the task whose report this is
	Attachments []attachmentData `json:"attachments,omitempty"`
}

type attachmentData struct {
	Name string `json:"name"`
	MIME string `json:"mime"`
	Data []byte `json:"data"`
}

func encodePayload(p messagePayload) ([]byte, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode queue payload: %w", err)
	}
	return b, nil
}

func decodePayload(b []byte) (messagePayload, error) {
	var p messagePayload
	if err := json.Unmarshal(b, &p); err != nil {
		return messagePayload{}, fmt.Errorf("decode queue payload: %w", err)
	}
	return p, nil
}
