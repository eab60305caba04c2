package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/switchboard-gw/switchboard/channels"
)

// Limits of setMyCommands.
const (
	maxCommands     = 100
	maxCommandName  = 32
	maxCommandDesc  = 256 // characters (UTF-16 code units)
	adminOnlySuffix = " (admins)"
)

var (
	_ channels.CommandRegistrar = (*Adapter)(nil)
	_ channels.DirectMessenger  = (*Adapter)(nil)
)

// RegisterCommands implements channels.CommandRegistrar with setMyCommands
// in the default scope (every chat), so Telegram clients offer the table in
// their "/" menu in the given order; a call replaces what the previous one
// registered, and an empty table removes the menu (deleteMyCommands).
//
// Admin-only commands are registered too, their description marked
// " (admins)": Telegram's scopes know a chat's administrators, not the
// gateway's admins, so hiding them would hide them from the wrong people;
// the gateway refuses them to everyone else. Arguments are not shown
// (Telegram's menu has only a description).
//
// Telegram's rules are checked first: a name of 1..32 lowercase letters,
// digits and '_', a description of 1..256 characters (longer ones are cut,
// line breaks become spaces), at most 100 commands, no duplicates. Commands
// that break them are left out and named in the error RegisterCommands then
// returns (permanent: registering them again cannot help), after the others
// were registered. Errors of the request itself are classified as for Send.
func (a *Adapter) RegisterCommands(ctx context.Context, cmds []channels.Command) error {
	list, skipped := botCommands(cmds)
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if len(list) == 0 {
		if _, err := a.bot.DeleteMyCommands(ctx, &bot.DeleteMyCommandsParams{}); err != nil {
			return a.red.classify("deleteMyCommands", err)
		}
	} else if _, err := a.bot.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: list}); err != nil {
		return a.red.classify("setMyCommands", err)
	}
	if len(skipped) > 0 {
		return channels.Permanent(fmt.Errorf("telegram: commands not registered: %w", errors.Join(skipped...)))
	}
	return nil
}

// botCommands converts the gateway's table to Telegram's, leaving out (and
// explaining) what Telegram would refuse.
func botCommands(cmds []channels.Command) ([]models.BotCommand, []error) {
	list := []models.BotCommand{}
	var skipped []error
	seen := map[string]bool{}
	for _, c := range cmds {
		desc := strings.Join(strings.Fields(c.Description), " ")
		if c.AdminOnly && !strings.Contains(strings.ToLower(desc), "admins") {
			desc = cutUTF16(desc, maxCommandDesc-len(adminOnlySuffix)) + adminOnlySuffix
		}
		desc = cutUTF16(desc, maxCommandDesc)
		switch {
		case !validCommandName(c.Name):
			skipped = append(skipped, fmt.Errorf("/%s: a name must be 1..%d lowercase letters, digits or '_'", c.Name, maxCommandName))
		case strings.TrimSpace(c.Description) == "":
			skipped = append(skipped, fmt.Errorf("/%s: the description is empty", c.Name))
		case seen[c.Name]:
			skipped = append(skipped, fmt.Errorf("/%s: listed twice", c.Name))
		case len(list) == maxCommands:
			skipped = append(skipped, fmt.Errorf("/%s: Telegram registers at most %d commands", c.Name, maxCommands))
		default:
			seen[c.Name] = true
			list = append(list, models.BotCommand{Command: c.Name, Description: desc})
		}
	}
	return list, skipped
}

func validCommandName(s string) bool {
	if s == "" || len(s) > maxCommandName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// DirectLocation implements channels.DirectMessenger: on Telegram the
// private chat with a user has the user's id as its chat id, so this is the
// location of the user's own messages to the bot (same Account, no thread).
// The user must have started the bot: until then Telegram refuses Send
// there with a permanent "chat not found" or "bot can't initiate
// conversation". It fails permanently for an id that is not a Telegram user
// id, and transiently while the bot's own id is unknown (a token without its
// numeric prefix, before Start's getMe).
func (a *Adapter) DirectLocation(ctx context.Context, userID string) (channels.Location, error) {
	id, err := strconv.ParseInt(userID, 10, 64)
	if err != nil || id <= 0 {
		return channels.Location{}, channels.Permanent(fmt.Errorf("telegram: %q is not a Telegram user id", userID))
	}
	me := a.identity()
	if me.ID == 0 {
		return channels.Location{}, errors.New("telegram: the bot's id is not known yet; try again after the bot connected")
	}
	return channels.Location{Channel: Name, Account: accountOf(me), ChatID: strconv.FormatInt(id, 10)}, nil
}

// accountOf is the Location.Account of every location of the bot: its user
// id.
func accountOf(me identity) string { return strconv.FormatInt(me.ID, 10) }
