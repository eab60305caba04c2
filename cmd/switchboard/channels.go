package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/discord"
	"github.com/switchboard-gw/switchboard/channels/slack"
	"github.com/switchboard-gw/switchboard/channels/telegram"
	"github.com/switchboard-gw/switchboard/channels/web"
	"github.com/switchboard-gw/switchboard/config"
	"github.com/switchboard-gw/switchboard/gateway"
)

// builtChannel is what a row of the channel table makes: the adapter, the
// HTTP routes it serves on the [http] listener, and extra gateway rules.
type builtChannel struct {
	adapter channels.Adapter
	routes  map[string]http.Handler // pattern → handler, e.g. "POST /telegram/webhook"
	// options adjusts the channel's gateway rules beyond the common keys.
	options func(*gateway.ChannelOptions)
	// banner, when set, is printed once at start (the web login link).
	banner string
}

// channelRow is one row of serve's channel table: an adapter costs its
// package plus one row here.
type channelRow struct {
	name string
	// chat returns the channel's common keys, and whether the channel is on.
	chat  func(cfg *config.Config) (config.Chat, bool)
	build func(a *app, cfg *config.Config) (builtChannel, error)
}

// channelTable lists every chat surface serve can run.
func channelTable() []channelRow {
	return []channelRow{
		{name: web.Name, chat: func(c *config.Config) (config.Chat, bool) { return c.Channels.Web.Chat, c.Channels.Web.Enabled }, build: buildWeb},
		{name: telegram.Name, chat: func(c *config.Config) (config.Chat, bool) {
			if t := c.Channels.Telegram; t != nil {
				return t.Chat, true
			}
			return config.Chat{}, false
		}, build: buildTelegram},
		{name: slack.Name, chat: func(c *config.Config) (config.Chat, bool) {
			if sc := c.Channels.Slack; sc != nil {
				return sc.Chat, true
			}
			return config.Chat{}, false
		}, build: buildSlack},
		{name: discord.Name, chat: func(c *config.Config) (config.Chat, bool) {
			if d := c.Channels.Discord; d != nil {
				return d.Chat, true
			}
			return config.Chat{}, false
		}, build: buildDiscord},
	}
}

func buildWeb(a *app, cfg *config.Config) (builtChannel, error) {
	token := cfg.Channels.Web.Token
	shown := token == ""
	if shown {
		token = randomToken()
		a.redactor.Add(token)
	}
	ad := web.New(web.Options{Token: token, OneTimeToken: shown, Sessions: a.store, Logger: a.log})
	b := builtChannel{
		adapter: ad,
		routes:  map[string]http.Handler{"/": ad.Handler()},
		options: func(o *gateway.ChannelOptions) { o.AllowAll, o.BrowseByConversation = true, true },
	}
	if shown {
		// Shown once on the terminal, like Jupyter; never logged.
		b.banner = "open the web page (login link, shown once): http://%s/?token=" + token
	} else {
		b.banner = "web page at http://%s/ (log in with [channels.web] token)"
	}
	return b, nil
}

func buildTelegram(a *app, cfg *config.Config) (builtChannel, error) {
	tc := cfg.Channels.Telegram
	tg, err := telegram.New(telegram.Options{
		Token:         tc.Token,
		APIURL:        tc.APIURL,
		Mode:          tc.Mode,
		WebhookURL:    tc.WebhookURL,
		WebhookSecret: tc.WebhookSecret,
		Logger:        a.log,
	})
	if err != nil {
		return builtChannel{}, err
	}
	return builtChannel{adapter: tg, routes: map[string]http.Handler{"POST /telegram/webhook": tg.WebhookHandler()}}, nil
}

func buildSlack(a *app, cfg *config.Config) (builtChannel, error) {
	sc := cfg.Channels.Slack
	ad, err := slack.New(slack.Options{
		Mode:            sc.Mode,
		BotToken:        sc.BotToken,
		AppToken:        sc.AppToken,
		SigningSecret:   sc.SigningSecret,
		APIURL:          sc.APIURL,
		AllowedChannels: sc.AllowedChannels,
		Threads:         a.recentLocations(slack.Name),
		Logger:          a.log,
	})
	if err != nil {
		return builtChannel{}, err
	}
	b := builtChannel{adapter: ad}
	if sc.Mode == config.SlackHTTP {
		// POST /slack/events, /slack/interactions, /slack/commands: the
		// paths the manifest names.
		b.routes = ad.Routes()
	}
	return b, nil
}

func buildDiscord(a *app, cfg *config.Config) (builtChannel, error) {
	dc := cfg.Channels.Discord
	ad, err := discord.New(discord.Options{
		Token:           dc.Token,
		ApplicationID:   dc.ApplicationID,
		APIURL:          dc.APIURL,
		AutoThread:      dc.AutoThread,
		AllowBots:       dc.AllowBots,
		Guilds:          dc.Guilds,
		AllowedChannels: dc.AllowedChannels,
		AllowRoles:      dc.AllowRoles,
		AdminRoles:      dc.AdminRoles,
		Locations:       a.recentLocations(discord.Name),
		Logger:          a.log,
	})
	if err != nil {
		return builtChannel{}, err
	}
	return builtChannel{adapter: ad}, nil
}

// Which bound locations an adapter catches up on after a fresh connect:
// those whose conversation was active in the last week, the newest 100
// (the adapter reads at most its catch-up window, an hour, of each). A
// conversation last active hours ago can still have a reply posted in the
// last hour, while serve was down: the window is the adapter's, not this.
const (
	catchUpActive    = 7 * 24 * time.Hour
	catchUpLocations = 100
)

// recentLocations is the Locations hook of an adapter that catches up
// after reconnecting: the channel's bound locations whose conversation was
// active recently, most recent first.
func (a *app) recentLocations(channel string) func(ctx context.Context) ([]channels.Location, error) {
	return func(ctx context.Context) ([]channels.Location, error) {
		bs, err := a.store.RecentBindings(ctx, channel, time.Now().Add(-catchUpActive), catchUpLocations)
		if err != nil {
			return nil, err
		}
		out := make([]channels.Location, 0, len(bs))
		for _, b := range bs {
			loc, err := channels.ParseLocation(b.Location)
			if err != nil {
				a.log.Warn("binding with a bad location skipped", "location", b.Location, "err", err)
				continue
			}
			out = append(out, loc)
		}
		return out, nil
	}
}

// gatewayOptions turns a channel's common keys into its gateway rules.
func gatewayOptions(c config.Chat) gateway.ChannelOptions {
	return gateway.ChannelOptions{
		Agent:          c.Agent,
		AllowUsers:     c.AllowUsers,
		Admins:         c.Admins,
		RequireMention: c.RequireMention,
		QueueMode:      c.QueueMode,
		EditInterval:   c.EditInterval,
	}
}

// buildChannels builds every enabled channel of the rows.
func buildChannels(a *app, cfg *config.Config, rows []channelRow) ([]builtChannel, map[string]gateway.ChannelOptions, error) {
	var out []builtChannel
	opts := map[string]gateway.ChannelOptions{}
	for _, row := range rows {
		chat, on := row.chat(cfg)
		if !on {
			continue
		}
		b, err := row.build(a, cfg)
		if err != nil {
			return nil, nil, fmt.Errorf("channel %s: %w", row.name, err)
		}
		co := gatewayOptions(chat)
		if b.options != nil {
			b.options(&co)
		}
		opts[row.name] = co
		out = append(out, b)
	}
	return out, opts, nil
}
