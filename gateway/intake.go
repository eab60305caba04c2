package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
)

// handler is the channels.Handler the gateway gives one adapter.
type handler struct {
	g       *Gateway
	channel string
}

// messagePayload is the body of an ItemMessage.
type messagePayload struct {
	EventID     string           `json:"eventId"`
	MessageID   string           `json:"messageId,omitempty"` // the platform's id, to thread the reply
	Text        string           `json:"text"`
	Who         string           `json:"who"` // qualified id
	Name        string           `json:"name,omitempty"`
	Origin      string           `json:"origin,omitempty"`
	Attachments []attachmentData `json:"attachments,omitempty"`
}

type attachmentData struct {
	Name string `json:"name"`
	MIME string `json:"mime"`
	Data []byte `json:"data"`
}

// maxImageBytes bounds an image sent to the model.
const maxImageBytes = 5 << 20

func (h *handler) OnInbound(ctx context.Context, in channels.Inbound) error {
	g := h.g
	g.opts.Metrics.Inbound.WithLabelValues(h.channel).Inc()
	co := g.opts.Channels[h.channel]
	who := channels.QualifiedID(h.channel, in.User.ID)
	text := strings.TrimSpace(in.Text)

	allowed, admin, err := g.authorize(ctx, h.channel, in.User.ID)
	if err != nil {
		return err
	}
	if !allowed {
		if in.DirectMessage {
			return g.startPairing(ctx, h.channel, in)
		}
		g.log.Debug("ignored message from unknown user in a group", "channel", h.channel, "user", who)
		return nil
	}
	binding, bound, err := g.binding(ctx, in.Location)
	if err != nil {
		return err
	}
	if !in.DirectMessage && co.RequireMention && !in.Mentioned && !in.ReplyToBot && !(bound && in.Location.ThreadID != "") {
		return nil
	}
	if strings.HasPrefix(text, "/") {
		if handled, err := g.command(ctx, h.channel, in, who, admin); handled || err != nil {
			return err
		}
	}
	if text == "" && len(in.Attachments) == 0 {
		return nil
	}
	if !bound && co.BrowseByConversation {
		if c, err := g.opts.AgentStore.Conversation(ctx, in.Location.ChatID); err == nil && c.AgentID == co.Agent {
			binding = Binding{Location: in.Location.String(), AgentID: c.AgentID, ConversationID: c.ID, Created: g.opts.Now().UTC()}
			if err := g.opts.Store.Bind(ctx, binding); err != nil {
				return fmt.Errorf("bind %s: %w", in.Location, err)
			}
			bound = true
		}
	}
	if !bound {
		binding, err = g.bind(ctx, in.Location, co.Agent)
		if err != nil {
			return err
		}
	}
	if g.opts.ModelProblem != "" {
		g.post(ctx, in.Location, outMessage{Notice: g.opts.ModelProblem})
		return nil
	}
	p := messagePayload{EventID: in.EventID, MessageID: in.MessageID, Text: in.Text, Who: who, Name: displayName(in.User), Origin: origin(h.channel, in)}
	for _, a := range in.Attachments {
		if len(a.Data) > 0 {
			p.Attachments = append(p.Attachments, attachmentData{Name: a.Name, MIME: a.MIME, Data: a.Data})
		}
	}
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	key := ""
	if in.EventID != "" {
		key = h.channel + ":" + in.EventID
	}
	_, enqueued, err := g.opts.Store.Enqueue(ctx, Item{
		ConversationID: binding.ConversationID,
		AgentID:        binding.AgentID,
		Kind:           ItemMessage,
		Location:       in.Location.String(),
		Payload:        body,
		Created:        g.opts.Now().UTC(),
	}, key, g.opts.DedupeTTL)
	if err != nil {
		return fmt.Errorf("queue message: %w", err)
	}
	if !enqueued {
		g.opts.Metrics.Duplicates.WithLabelValues(h.channel).Inc()
		return nil
	}
	if g.queueMode(in.Location) == QueueInterrupt {
		g.interrupt(binding.ConversationID)
	}
	g.kick(binding.ConversationID)
	return nil
}

func displayName(u channels.User) string {
	switch {
	case u.Name != "" && u.Username != "":
		return u.Name + " (@" + u.Username + ")"
	case u.Name != "":
		return u.Name
	case u.Username != "":
		return "@" + u.Username
	}
	return u.ID
}

func origin(channel string, in channels.Inbound) string {
	kind := "group chat " + in.Location.ChatID
	if in.DirectMessage {
		kind = "direct message"
	}
	if in.Location.ThreadID != "" {
		kind += ", thread " + in.Location.ThreadID
	}
	return channel + " " + kind
}

// authorize says whether a user may talk, and whether they are an admin.
func (g *Gateway) authorize(ctx context.Context, channel, userID string) (allowed, admin bool, err error) {
	co := g.opts.Channels[channel]
	if slices.Contains(co.Admins, userID) {
		return true, true, nil
	}
	if co.AllowAll || slices.Contains(co.AllowUsers, userID) {
		return true, co.AllowAll && len(co.Admins) == 0, nil
	}
	paired, err := g.opts.Store.Paired(ctx, channel, userID)
	if err != nil {
		return false, false, fmt.Errorf("check pairing: %w", err)
	}
	return paired, false, nil
}

// isAdmin says whether a qualified id is an admin of its channel.
func (g *Gateway) isAdmin(who string) bool {
	ch, id, err := channels.ParseIdentity(who)
	if err != nil {
		return false
	}
	co, ok := g.opts.Channels[ch]
	if !ok {
		return false
	}
	return slices.Contains(co.Admins, id) || (co.AllowAll && len(co.Admins) == 0)
}

const (
	pairingTTL = time.Hour
	// maxPendingPairing bounds a channel's pending codes; a new stranger
	// evicts the oldest stranger's code rather than being refused.
	maxPendingPairing = 10
	// pairingNoticeEvery: a stranger gets at most one code message per
	// this interval, however often they write.
	pairingNoticeEvery = time.Hour
)

// startPairing answers an unknown user's DM with a one-time code — the
// same code while it is pending, and at most once an hour.
func (g *Gateway) startPairing(ctx context.Context, channel string, in channels.Inbound) error {
	now := g.opts.Now().UTC()
	p, notify, err := g.opts.Store.CreatePairing(ctx, Pairing{
		Code:     pairingCode(),
		Channel:  channel,
		UserID:   in.User.ID,
		UserName: displayName(in.User),
		Location: in.Location.String(),
		Created:  now,
		Expires:  now.Add(pairingTTL),
	}, maxPendingPairing, pairingNoticeEvery, now)
	if err != nil {
		return fmt.Errorf("create pairing code: %w", err)
	}
	if !notify {
		g.log.Debug("unknown user wrote again; their pairing code was sent within the hour", "channel", channel, "user", in.User.ID)
		return nil
	}
	g.post(ctx, in.Location, outMessage{Markdown: fmt.Sprintf(
		"Hi! I only talk to people my owner allowed.\n\nYour pairing code is **%s** (valid for one hour). Ask the owner to run `switchboard pair approve %s` or to send `/pair approve %s` to me.",
		p.Code, p.Code, p.Code)})
	return nil
}

// pairingCode is 8 characters from an alphabet without look-alikes.
func pairingCode() string {
	const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, 8)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b[i] = alphabet[n.Int64()]
	}
	return string(b)
}

// binding returns the binding of a location.
func (g *Gateway) binding(ctx context.Context, loc channels.Location) (Binding, bool, error) {
	b, err := g.opts.Store.Binding(ctx, loc.String())
	if errors.Is(err, ErrNotFound) {
		return Binding{}, false, nil
	}
	if err != nil {
		return Binding{}, false, fmt.Errorf("look up binding: %w", err)
	}
	return b, true, nil
}

// bind creates a new conversation for a location.
func (g *Gateway) bind(ctx context.Context, loc channels.Location, agentID string) (Binding, error) {
	ag, ok := g.opts.Agents[agentID]
	if !ok {
		return Binding{}, fmt.Errorf("unknown agent %q", agentID)
	}
	conv, err := ag.NewConversation(ctx)
	if err != nil {
		return Binding{}, err
	}
	b := Binding{Location: loc.String(), AgentID: agentID, ConversationID: conv.ID, Created: g.opts.Now().UTC()}
	if err := g.opts.Store.Bind(ctx, b); err != nil {
		return Binding{}, fmt.Errorf("bind %s: %w", loc, err)
	}
	return b, nil
}

func (g *Gateway) queueMode(loc channels.Location) string {
	g.mu.Lock()
	m := g.queueMod[loc.String()]
	g.mu.Unlock()
	if m != "" {
		return m
	}
	return g.opts.Channels[loc.Channel].QueueMode
}

// inputFor turns a message payload into agent input. dropped, when not
// empty, tells the person what did not reach the model.
func (g *Gateway) inputFor(agentID string, p messagePayload) (in agentcore.Input, dropped string) {
	parts := []agentcore.Part{}
	if strings.TrimSpace(p.Text) != "" {
		parts = append(parts, agentcore.Part{Type: agentcore.PartText, Text: p.Text})
	}
	vision := g.opts.AgentOptions[agentID].Vision
	for _, a := range p.Attachments {
		switch {
		case !strings.HasPrefix(a.MIME, "image/"):
			parts = append(parts, agentcore.Part{Type: agentcore.PartText, Text: fmt.Sprintf("[The user attached %s (%s), which is not passed to the model.]", a.Name, a.MIME)})
			dropped = "The file " + a.Name + " was not passed to the model: only images are."
		case !vision:
			parts = append(parts, agentcore.Part{Type: agentcore.PartText, Text: "[The user sent an image, but this model does not accept images (vision = false).]"})
			dropped = "The model does not accept images (vision = false in [providers]), so it only hears that you sent one."
		case len(a.Data) > maxImageBytes:
			parts = append(parts, agentcore.Part{Type: agentcore.PartText, Text: fmt.Sprintf("[The user sent an image of %d bytes, over the %d byte limit.]", len(a.Data), maxImageBytes)})
			dropped = fmt.Sprintf("The image is over the %d MiB limit, so the model only hears that you sent one.", maxImageBytes>>20)
		default:
			parts = append(parts, agentcore.Part{Type: agentcore.PartImage, MIME: a.MIME, Data: a.Data})
		}
	}
	speaker := p.Name
	if speaker == "" {
		speaker = p.Who
	} else {
		speaker += " (" + p.Who + ")"
	}
	return agentcore.Input{Kind: agentcore.InputUser, Parts: parts, Requester: p.Who, Speaker: speaker, Origin: p.Origin}, dropped
}
