package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/switchboard-gw/switchboard/channels"
)

// Texts shown to people.
const (
	actionFailedText  = "Something went wrong with that button. Please try again."
	commandFailedText = "switchboard could not take that command just now. Please try again."
	unknownCommand    = "Unknown command. Try `/switchboard help`."
	imageFailedNote   = "[The user sent an image that could not be downloaded.]"
	imageTooBigNote   = "[The user sent an image larger than the download limit; it was not read.]"
	fileNote          = "[The user attached a file that was not read: %s]"
)

// handleEvent hands one event_callback to h. It returns an error only when
// OnInbound refused it (so it must not be acknowledged). Events the gateway
// has (the same event_id, or the other event of an app_mention+message
// pair) are not handed over again.
func (a *Adapter) handleEvent(ctx context.Context, r *run, raw []byte) error {
	cb, err := parseCallback(raw)
	if err != nil {
		a.log.Warn("slack event ignored", "err", err)
		return nil
	}
	if cb.EventID != "" && a.accepted.Has("event:"+cb.EventID) {
		a.log.Debug("slack event delivered again; already accepted", "event", cb.EventID)
		return nil
	}
	d, why := convertEvent(cb, a.identity())
	if why != "" {
		a.log.Debug("slack event ignored", "event", cb.EventID, "why", why)
		return nil
	}
	// What was missed in this conversation goes first (see behind).
	k := threadKey(d.in.Location.ChatID, d.in.Location.ThreadID)
	if loc, mine := r.behind.before(ctx, k); mine {
		a.catchUpOne(ctx, r.h, loc)
		r.behind.finish(k)
	}
	if err := a.deliver(ctx, r.h, d); err != nil {
		return fmt.Errorf("handle event %s: %w", cb.EventID, err)
	}
	if cb.EventID != "" {
		a.accepted.Put("event:"+cb.EventID, struct{}{})
	}
	return nil
}

// deliver hands a converted message to h once: it resolves names, fetches
// images, and remembers what was accepted.
func (a *Adapter) deliver(ctx context.Context, h channels.Handler, d draft) error {
	in := d.in
	if !a.channelAllowed(in.Location.ChatID, in.DirectMessage) {
		return nil
	}
	key := "message:" + in.EventID
	if a.accepted.Has(key) {
		return nil
	}
	thread := threadKey(in.Location.ChatID, in.Location.ThreadID)
	if in.Location.ThreadID != "" && a.botThreads.Has(thread) {
		in.ReplyToBot = true
	}
	a.enrich(ctx, &in, d)
	ignored, err := handOver(ctx, h, in)
	if err != nil {
		return err
	}
	if ignored && in.Location.ThreadID != "" && !in.DirectMessage {
		// Not taken, so neither accepted nor seen: the thread's mention
		// may still be on its way (see orphans).
		a.orphans.hold(d)
		return nil
	}
	a.accepted.Put(key, struct{}{})
	a.noteSeen(in.Location.ChatID, in.Location.ThreadID, in.MessageID)
	if !ignored && in.Location.ThreadID != "" {
		for _, o := range a.orphans.take(in.Location.ChatID, in.Location.ThreadID, in.MessageID) {
			a.log.Debug("slack thread reply handed over again after the message that took its thread", "location", in.Location.String(), "ts", o.in.MessageID)
			if err := a.deliver(ctx, h, o); err != nil {
				// Left to catch-up, which starts after the newest
				// message seen before it.
				a.log.Warn("slack thread reply not accepted; catch-up will try again", "location", in.Location.String(), "err", err)
				break
			}
		}
	}
	return nil
}

func threadKey(chat, thread string) string { return chat + "/" + thread }

// noteSeen remembers ts as the newest message seen in a thread (catch-up
// starts after it).
func (a *Adapter) noteSeen(chat, thread, ts string) {
	if ts == "" {
		return
	}
	k := threadKey(chat, thread)
	if old, ok := a.lastSeen.Get(k); ok && !tsLess(old, ts) {
		return
	}
	a.lastSeen.Put(k, ts)
}

// enrich fills what conversion left to look up: the author's and mentioned
// users' names, images as attachments, notes for other files. Failures
// leave the message as it is, never lose it.
func (a *Adapter) enrich(ctx context.Context, in *channels.Inbound, d draft) {
	if u, ok := a.userName(ctx, in.User.ID); ok {
		in.User.Name, in.User.Username = u.Name, u.Username
	}
	if len(d.users) > 0 {
		names := map[string]string{}
		for _, id := range d.users {
			if u, ok := a.userName(ctx, id); ok {
				names[id] = u.display()
			}
		}
		in.Text, _, _ = plainText(d.raw, a.identity().UserID, names)
	}
	var notes []string
	images := 0
	for _, f := range d.files {
		if !strings.HasPrefix(f.Mimetype, "image/") || images >= 4 {
			notes = append(notes, fmt.Sprintf(fileNote, fileLabel(f)))
			continue
		}
		images++
		if f.Size > a.opts.MaxDownload {
			notes = append(notes, imageTooBigNote)
			continue
		}
		data, err := a.download(ctx, f)
		if err != nil {
			a.log.Warn("slack image download failed", "file", f.ID, "err", err)
			note := imageFailedNote
			if errors.Is(err, errTooLarge) {
				note = imageTooBigNote
			}
			notes = append(notes, note)
			continue
		}
		in.Attachments = append(in.Attachments, channels.Attachment{Name: safeName(f.Name, f.ID), MIME: f.Mimetype, Data: data})
	}
	if len(notes) > 0 {
		in.Text = strings.TrimSpace(in.Text + "\n\n" + strings.Join(notes, "\n"))
	}
}

func fileLabel(f file) string {
	name := strings.ToValidUTF8(f.Name, "")
	if len(name) > 80 {
		name = name[:80]
	}
	if name == "" {
		name = "unnamed"
	}
	return fmt.Sprintf("%s (%s, %d bytes)", name, clip(f.Mimetype), f.Size)
}

// errTooLarge is a download over Options.MaxDownload.
var errTooLarge = errors.New("file is larger than the download limit")

// download fetches a file's private URL with the bot token, at most
// MaxDownload bytes. The SDK refuses to send the token anywhere but Slack's
// https hosts or the API URL's host.
func (a *Adapter) download(ctx context.Context, f file) ([]byte, error) {
	u := f.URLPrivateDownload
	if u == "" {
		u = f.URLPrivate
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	w := &limitWriter{max: a.opts.MaxDownload}
	if err := a.api.GetFileContext(ctx, u, w); err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, errTooLarge
		}
		return nil, a.red.classify("file download", err)
	}
	return w.buf.Bytes(), nil
}

type limitWriter struct {
	buf bytes.Buffer
	max int64
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if int64(w.buf.Len()+len(p)) > w.max {
		return 0, errTooLarge
	}
	return w.buf.Write(p)
}

// safeName is a file name safe to pass on.
func safeName(name, id string) string {
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return -1
	}, name)
	clean = strings.TrimLeft(clean, ".")
	if len(clean) > 100 {
		clean = clean[len(clean)-100:]
	}
	if clean == "" {
		clean = "image-" + strings.Map(func(r rune) rune {
			if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, id)
	}
	return clean
}

// userName is a cached users.info answer.
type userName struct {
	Name     string // display name, else real name
	Username string // the handle
}

func (u userName) display() string {
	if u.Name != "" {
		return u.Name
	}
	return u.Username
}

// userName resolves a user's names with users.info, cached for an hour (a
// failure for a minute, so a flood of messages does not flood the API).
func (a *Adapter) userName(ctx context.Context, id string) (userName, bool) {
	if u, ok := a.names.Get(id); ok {
		return u, u != userName{}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u, err := a.api.GetUserInfoContext(ctx, id)
	if err != nil {
		a.log.Debug("slack users.info failed", "user", id, "err", a.red.wrap("users.info", err))
		a.names.PutFor(id, userName{}, time.Minute)
		return userName{}, false
	}
	n := userName{Name: u.Profile.DisplayName, Username: u.Name}
	if n.Name == "" {
		n.Name = u.Profile.RealName
	}
	if n.Name == "" {
		n.Name = u.RealName
	}
	n.Name, n.Username = validText(n.Name), validText(n.Username)
	a.names.Put(id, n)
	return n, n != userName{}
}

// handleInteraction handles a press that was acknowledged already: the
// handler's reply (or a failure note) goes to the presser only.
func (a *Adapter) handleInteraction(ctx context.Context, h channels.Handler, raw []byte) {
	it, err := parseInteraction(raw)
	if err != nil {
		a.log.Warn("slack interaction ignored", "err", err)
		return
	}
	act, responseURL, why := convertAction(it, a.identity())
	if why != "" {
		a.log.Debug("slack interaction ignored", "why", why)
		return
	}
	reply, err := h.OnAction(ctx, act)
	if err != nil {
		a.log.Warn("slack button press failed", "event", act.EventID, "err", err)
		reply = channels.ActionReply{Text: actionFailedText}
	}
	if reply.Text == "" {
		return
	}
	a.tellUser(ctx, act.Location, act.User.ID, responseURL, reply.Text)
}

// commandAck decides the immediate answer to a slash command: nil (an
// empty acknowledgement) and handOver for a command the gateway runs, or
// an ephemeral text (help from the registered table, or a refusal).
func (a *Adapter) commandAck(c command) (reply any, handOver bool) {
	_, sub, why := convertCommand(c, a.identity())
	switch {
	case why == "unknown command":
		return ephemeral(unknownCommand), false
	case why != "":
		a.log.Warn("slack slash command ignored", "why", why)
		return nil, false
	case sub == "help":
		if cmds := a.commands.Load(); cmds != nil && len(*cmds) > 0 {
			return ephemeral(helpText(*cmds)), false
		}
	}
	return nil, true
}

func ephemeral(text string) map[string]any {
	return map[string]any{"response_type": "ephemeral", "text": text}
}

// helpText lists the registered commands as /switchboard subcommands, in
// mrkdwn.
func helpText(cmds []channels.Command) string {
	var b strings.Builder
	b.WriteString("**switchboard commands**: write `" + SlashCommand + " <command>`, or `/<command>` in a thread with the bot.\n\n")
	for _, c := range cmds {
		usage := c.Name
		if c.Args != "" {
			usage += " " + c.Args
		}
		fmt.Fprintf(&b, "- `%s` — %s", strings.ReplaceAll(usage, "`", "'"), channels.EscapeMarkdown(c.Description))
		if c.AdminOnly {
			b.WriteString(" *(admins)*")
		}
		b.WriteString("\n")
	}
	return channels.Render(b.String(), channels.SlackMrkdwn)
}

// handleCommand hands an acknowledged slash command to the gateway; when it
// is refused, the user is told to try again (Slack does not retry commands).
func (a *Adapter) handleCommand(ctx context.Context, h channels.Handler, c command) {
	in, _, why := convertCommand(c, a.identity())
	if why != "" {
		return
	}
	if !a.channelAllowed(in.Location.ChatID, in.DirectMessage) {
		a.tellUser(ctx, in.Location, in.User.ID, c.ResponseURL, "switchboard does not answer in this channel.")
		return
	}
	if u, ok := a.userName(ctx, in.User.ID); ok {
		in.User.Name = u.Name
		if u.Username != "" {
			in.User.Username = u.Username
		}
	}
	if err := h.OnInbound(ctx, in); err != nil {
		a.log.Warn("slack slash command not accepted", "err", err)
		a.tellUser(ctx, in.Location, in.User.ID, c.ResponseURL, commandFailedText)
	}
}

// tellUser shows text to one user: through the interaction's response_url
// when it is Slack's (or the API host's), else chat.postEphemeral.
func (a *Adapter) tellUser(ctx context.Context, loc channels.Location, userID, responseURL, text string) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if a.trustedURL(responseURL) {
		err := a.postResponseURL(ctx, responseURL, text)
		if err == nil {
			return
		}
		a.log.Warn("slack response_url failed; trying chat.postEphemeral", "err", err)
	}
	if err := a.SendEphemeral(ctx, loc, userID, channels.TextMessage(channels.EscapeMarkdown(text))); err != nil {
		a.log.Warn("slack ephemeral reply failed", "err", err)
	}
}

// trustedURL accepts https URLs on Slack's hosts and URLs on the API URL's
// host (a fake in tests): a response_url from a payload is never used to
// send our text elsewhere.
func (a *Adapter) trustedURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	if u.Scheme == a.apiURL.Scheme && strings.EqualFold(u.Host, a.apiURL.Host) {
		return true
	}
	host := strings.ToLower(u.Hostname())
	return u.Scheme == "https" && (host == "slack.com" || strings.HasSuffix(host, ".slack.com"))
}

// postResponseURL posts an ephemeral message to a response_url, keeping the
// original message (replace_original false is explicit: Slack's default
// differs between payload types).
func (a *Adapter) postResponseURL(ctx context.Context, responseURL, text string) error {
	body, err := json.Marshal(map[string]any{
		"response_type":    "ephemeral",
		"replace_original": false,
		"text":             channels.Render(channels.EscapeMarkdown(text), channels.SlackMrkdwn),
	})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, responseURL, bytes.NewReader(body))
	if err != nil {
		return refuse("bad response_url")
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return a.red.wrap("response_url", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return a.red.wrap("response_url", slack.StatusCodeError{Code: resp.StatusCode, Status: resp.Status})
	}
	return nil
}

// handOver gives in to h and reports whether the gateway ignored it (only a
// handler that is a channels.Queuer can say so).
func handOver(ctx context.Context, h channels.Handler, in channels.Inbound) (ignored bool, err error) {
	if q, ok := h.(channels.Queuer); ok {
		res, err := q.Queue(ctx, in)
		return res.Ignored, err
	}
	return false, h.OnInbound(ctx, in)
}
