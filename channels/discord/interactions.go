package discord

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/switchboard-gw/switchboard/channels"
)

// Texts shown to people.
const (
	actionFailedText = "Something went wrong with that button. Please try again."
	notHereText      = "This bot does not answer commands here."
	commandAckText   = "Received `/%s`."
)

// Interaction response types and message flags.
const (
	respondMessage        = 4 // CHANNEL_MESSAGE_WITH_SOURCE
	respondDeferredUpdate = 6 // DEFERRED_UPDATE_MESSAGE
	flagEphemeral         = 1 << 6
)

// interact answers interactions until ctx ends. Each is acknowledged first
// (Discord wants an answer within 3 s), then handed over:
//
//   - a button press: a deferred update (the message stays as it is until
//     the gateway edits it), then OnAction, whose reply reaches the presser
//     as an ephemeral followup;
//   - a slash command: an ephemeral "received" response, then an Inbound
//     "/name args" whose MessageID is a handle to the interaction, so the
//     gateway's reply (Message.ReplyTo = the handle) replaces it.
func (a *Adapter) interact(ctx context.Context, h channels.Handler) {
	for {
		var i interaction
		select {
		case <-ctx.Done():
			return
		case i = <-a.interactions:
		}
		a.interaction(ctx, h, i)
	}
}

func (a *Adapter) interaction(ctx context.Context, h channels.Handler, i interaction) {
	if i.Type == interactionPing || i.Type == interactionAutocomplete {
		return
	}
	ch := channelInfo{ID: i.ChannelID}
	if i.Channel != nil && i.Channel.ID == i.ChannelID {
		ch = *i.Channel
	} else if i.GuildID != "" && i.ChannelID != "" {
		// Only to tell a thread from a channel; the ack must not wait for
		// a slow lookup, so a cached answer or a short one.
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		if c, err := a.channel(lctx, i.ChannelID); err == nil {
			ch = c
		}
		cancel()
	}
	r := convertInteraction(i, ch, a.identity(), a.filters)
	switch {
	case r.action != nil:
		if err := a.respond(ctx, i, map[string]any{"type": respondDeferredUpdate}); err != nil {
			a.log.Warn("discord button press not acknowledged", "err", err)
		}
		reply, err := h.OnAction(ctx, *r.action)
		if err != nil {
			a.log.Warn("discord button press failed", "interaction", i.ID, "err", err)
			reply = channels.ActionReply{Text: actionFailedText}
		}
		if reply.Text != "" {
			a.followup(ctx, i, reply.Text)
		}
	case r.command != nil:
		a.inter.put(i, a.now())
		ack := map[string]any{"type": respondMessage, "data": map[string]any{
			"content":          sprintf(commandAckText, i.Data.Name),
			"flags":            flagEphemeral,
			"allowed_mentions": noMentions(),
		}}
		if err := a.respond(ctx, i, ack); err != nil {
			a.log.Warn("discord command not acknowledged", "err", err)
		}
		a.deliverCommand(ctx, h, *r.command)
	default:
		a.log.Debug("discord interaction ignored", "interaction", i.ID, "why", r.ignore)
		if i.Type == interactionCommand && r.ignore != "" {
			a.respond(ctx, i, map[string]any{"type": respondMessage, "data": map[string]any{
				"content": notHereText, "flags": flagEphemeral,
			}})
		}
	}
}

// deliverCommand hands a command over, retrying until it is accepted or
// ctx ends.
func (a *Adapter) deliverCommand(ctx context.Context, h channels.Handler, in channels.Inbound) {
	bo := backoff{min: a.minBackoff / 4, max: a.maxBackoff / 4}
	for {
		err := h.OnInbound(ctx, in)
		if err == nil || ctx.Err() != nil {
			return
		}
		wait := bo.next()
		a.log.Warn("discord command not accepted; retrying", "interaction", in.EventID, "err", err, "wait", wait)
		if !sleep(ctx, wait) {
			return
		}
	}
}

// respond sends the interaction's (one) initial response.
func (a *Adapter) respond(ctx context.Context, i interaction, body any) error {
	return a.call(ctx, "interaction response", http.MethodPost,
		discordgo.EndpointInteractionResponse(i.ID, i.Token), "interactions", body, nil)
}

// followup shows text to the user of an interaction only.
func (a *Adapter) followup(ctx context.Context, i interaction, text string) {
	app := i.ApplicationID
	if app == "" {
		app = a.appID()
	}
	body := map[string]any{"content": cut(text, maxMessageLen), "flags": flagEphemeral, "allowed_mentions": noMentions()}
	err := a.call(ctx, "interaction followup", http.MethodPost, discordgo.EndpointFollowupMessage(app, i.Token), "webhooks", body, nil)
	if err != nil {
		a.log.Warn("discord ephemeral reply failed", "err", err)
	}
}

// interactionBook remembers recent command interactions (their tokens stay
// in memory, never in Inbound) and the messages sent through them, so
// Send and Edit can answer through the interaction while its token is
// valid.
type interactionBook struct {
	mu       sync.Mutex
	byID     map[string]bookedInteraction // interaction id →
	messages map[string]bookedInteraction // message id sent through it →
}

type bookedInteraction struct {
	id, app, token string
	at             time.Time
}

func (b *interactionBook) init() {
	b.byID = map[string]bookedInteraction{}
	b.messages = map[string]bookedInteraction{}
}

func (b *interactionBook) put(i interaction, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.prune(now)
	b.byID[i.ID] = bookedInteraction{id: i.ID, app: i.ApplicationID, token: i.Token, at: now}
}

func (b *interactionBook) get(id string, now time.Time) (bookedInteraction, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bi, ok := b.byID[id]
	return bi, ok && now.Sub(bi.at) < interactionTTL
}

func (b *interactionBook) sent(msgID string, bi bookedInteraction) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.messages[msgID] = bi
}

func (b *interactionBook) message(msgID string, now time.Time) (bookedInteraction, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bi, ok := b.messages[msgID]
	return bi, ok && now.Sub(bi.at) < interactionTTL
}

func (b *interactionBook) prune(now time.Time) {
	for k, v := range b.byID {
		if now.Sub(v.at) >= interactionTTL {
			delete(b.byID, k)
		}
	}
	for k, v := range b.messages {
		if now.Sub(v.at) >= interactionTTL {
			delete(b.messages, k)
		}
	}
}
