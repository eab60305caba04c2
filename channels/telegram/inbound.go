package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/go-telegram/bot"

	"github.com/switchboard-gw/switchboard/channels"
)

// Texts shown to people.
const (
	actionFailedText = "Something went wrong with that button. Please try again."
	imageFailedNote  = "[The user sent an image that could not be downloaded.]"
	imageTooBigNote  = "[The user sent an image larger than the download limit; it was not read.]"
)

// dispatch handles one update: it converts it, downloads an image, and calls
// the handler. It returns an error only when OnInbound did not accept the
// update (so it must not be acknowledged). Button presses are always
// answered and acknowledged, also when OnAction fails: the presser is told
// to try again.
func (a *Adapter) dispatch(ctx context.Context, h channels.Handler, raw []byte) error {
	u, err := parseUpdate(raw)
	if err != nil {
		a.log.Warn("telegram update ignored", "err", err)
		return nil
	}
	ev := convert(u, a.identity(), a.opts.MaxDownload)
	switch ev.kind {
	case kindIgnore:
		a.log.Debug("telegram update ignored", "update", u.UpdateID, "why", ev.why)
		return nil
	case kindAnswer:
		a.answer(ctx, ev.callbackID, channels.ActionReply{Text: ev.answer})
		return nil
	case kindAction:
		reply, err := h.OnAction(ctx, ev.action)
		if err != nil {
			a.log.Warn("telegram button press failed", "update", u.UpdateID, "err", err)
			reply = channels.ActionReply{Text: actionFailedText, Alert: true}
		}
		a.answer(ctx, ev.callbackID, reply)
		return nil
	}
	in := ev.inbound
	if ev.photo != nil {
		a.attachPhoto(ctx, &in, *ev.photo)
	}
	if err := h.OnInbound(ctx, in); err != nil {
		return fmt.Errorf("handle update %d: %w", u.UpdateID, err)
	}
	return nil
}

// answer sends answerCallbackQuery, which stops the button's spinner.
func (a *Adapter) answer(ctx context.Context, id string, reply channels.ActionReply) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	_, err := a.bot.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{
		CallbackQueryID: id,
		Text:            cutUTF16(reply.Text, maxAnswer),
		ShowAlert:       reply.Alert,
	})
	if err != nil {
		a.log.Warn("telegram answerCallbackQuery failed", "err", a.red.wrap("answerCallbackQuery", err))
	}
}

// attachPhoto downloads the photo into an attachment; a failure becomes a
// note in the text, never a lost message.
func (a *Adapter) attachPhoto(ctx context.Context, in *channels.Inbound, p photoSize) {
	data, err := a.download(ctx, p.FileID)
	if err != nil {
		note := imageFailedNote
		if errors.Is(err, errTooLarge) {
			note = imageTooBigNote
		}
		a.log.Warn("telegram image download failed", "err", err)
		in.Text = strings.TrimSpace(in.Text + "\n\n" + note)
		return
	}
	name := "photo.jpg"
	if id := safeName(p.FileUniqueID); id != "" {
		name = "photo-" + id + ".jpg"
	}
	in.Attachments = append(in.Attachments, channels.Attachment{Name: name, MIME: "image/jpeg", Data: data})
}

// download fetches a file by id with getFile and the file route, at most
// MaxDownload bytes.
func (a *Adapter) download(ctx context.Context, fileID string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	f, err := a.bot.GetFile(ctx, &bot.GetFileParams{FileID: fileID})
	if err != nil {
		return nil, a.red.classify("getFile", err)
	}
	if f.FileSize > a.opts.MaxDownload {
		return nil, errTooLarge
	}
	if f.FilePath == "" {
		return nil, fmt.Errorf("telegram getFile: no file_path for the file")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.bot.FileDownloadLink(f), nil)
	if err != nil {
		return nil, a.red.wrap("download", err)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, a.red.wrap("download", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, a.red.wrap("download", &apiError{Method: "file download", Code: resp.StatusCode})
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, a.opts.MaxDownload+1))
	if err != nil {
		return nil, a.red.wrap("download", err)
	}
	if int64(len(data)) > a.opts.MaxDownload {
		return nil, errTooLarge
	}
	return data, nil
}

// safeName keeps the characters of s that are safe in a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return -1
	}, s)
}
