package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/switchboard-gw/switchboard/channels/telegram/telegramtest"
)

// watch follows every Bot API call the server makes: approval keyboards,
// answers, button answers.
func (c *campaign) watch(ctx context.Context) {
	seq := 0
	for {
		calls, err := c.tg.WaitCalls(ctx, seq)
		if err != nil {
			return
		}
		for _, call := range calls {
			seq = call.Seq
			c.observe(call)
		}
	}
}

func (c *campaign) observe(call telegramtest.Call) {
	if call.Method == "getUpdates" {
		return
	}
	c.touch()
	if call.Status != 200 {
		c.log.add("api", "", "%s answered %d (message %s): %.80q", call.Method, call.Status, call.Params["message_id"], call.Params["text"])
		return
	}
	text := call.Params["text"]
	switch call.Method {
	case "sendMessage":
		if m := askCmdRE.FindStringSubmatch(text); m != nil && strings.Contains(text, "Approval needed") && call.Has("reply_markup") {
			c.approvalShown(call, m[1])
			return
		}
		if m := ansRE.FindStringSubmatch(text); m != nil {
			state := "partial"
			if endRE.MatchString(text) {
				state = "complete"
			}
			c.log.add("answer", m[1], "message %d sent with the %s answer", call.MessageID, state)
		}
		c.answerSeen(text)
	case "editMessageText":
		if strings.Contains(text, "Approved") || strings.Contains(text, "Denied") {
			if m := askCmdRE.FindStringSubmatch(text); m != nil {
				c.log.add("edited", m[1], "approval message %s now shows: %.60s", call.Params["message_id"], text)
			}
		}
		if m := endRE.FindStringSubmatch(text); m != nil {
			c.mu.Lock()
			_, seen := c.answered[m[1]]
			c.mu.Unlock()
			if !seen {
				c.log.add("answer", m[1], "message %s edited to the complete answer", call.Params["message_id"])
			}
		}
		c.answerSeen(text)
	case "answerCallbackQuery":
		kind, token := "answered", ""
		if p := c.pressOfCallback(call.Params["callback_query_id"]); p != nil {
			token = p.ep.token
			if p.role == pressOld {
				kind = "old-answer"
			}
		}
		c.log.add(kind, token, "%s: %q", call.Params["callback_query_id"], call.Params["text"])
	}
}

func (c *campaign) answerSeen(text string) {
	m := endRE.FindStringSubmatch(text)
	if m == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.answered[m[1]]; !ok {
		c.answered[m[1]] = time.Now()
		c.notifyLocked()
	}
}

func (c *campaign) pressOfCallback(id string) *press {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.presses {
		if id == fmt.Sprintf("cb%d", p.updateID) {
			return p
		}
	}
	return nil
}

func (c *campaign) approvalShown(call telegramtest.Call, token string) {
	var markup struct {
		InlineKeyboard [][]struct {
			Text         string `json:"text"`
			CallbackData string `json:"callback_data"`
		} `json:"inline_keyboard"`
	}
	_ = json.Unmarshal([]byte(call.Params["reply_markup"]), &markup)
	s := &shownApproval{token: token, msgID: call.MessageID, chatID: call.Int("chat_id"), thread: call.Int("message_thread_id"), buttons: map[string]string{}, at: call.At}
	for _, row := range markup.InlineKeyboard {
		for _, b := range row {
			s.buttons[b.Text] = b.CallbackData
		}
	}
	c.addShown(token, s, fmt.Sprintf("message %d", s.msgID))
}

// addShown notes an approval message the bot posted with its buttons.
func (c *campaign) addShown(token string, s *shownApproval, where string) {
	c.mu.Lock()
	first := len(c.shown[token]) == 0
	c.shown[token] = append(c.shown[token], s)
	ep := c.episodes[token]
	c.notifyLocked()
	c.mu.Unlock()
	if first && ep != nil {
		close(ep.shown)
	}
	c.log.add("approval", token, "keyboard shown as %s", where)
}

// writeCallLog writes every Bot API call but the polls, for reading a
// failure with -keep.
func (c *campaign) writeCallLog(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, call := range c.tg.Calls() {
		if call.Method == "getUpdates" {
			continue
		}
		fmt.Fprintf(f, "%9.3fs %-20s %d chat=%s thread=%s msg=%s created=%d cb=%s text=%q\n",
			c.log.since(call.At).Seconds(), call.Method, call.Status, call.Params["chat_id"], call.Params["message_thread_id"],
			call.Params["message_id"], call.MessageID, call.Params["callback_query_id"], call.Params["text"])
	}
	return nil
}
