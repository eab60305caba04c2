package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The [channels.*] blocks of the Slack, Discord and API issues, verbatim:
// their keys are a contract.
const slackExample = `
[channels.slack]
mode = "socket"                  # socket | http
app_token = "${SLACK_APP_TOKEN}"
bot_token = "${SLACK_BOT_TOKEN}"
signing_secret = "${SLACK_SIGNING_SECRET}"
api_url = "https://slack.com/api/"
agent = "main"
allow_users = ["U012ABCDEF"]
admins = ["U012ABCDEF"]
require_mention = true
allowed_channels = []            # empty = every channel the bot is in
`

const discordExample = `
[channels.discord]
token = "${DISCORD_BOT_TOKEN}"
application_id = "123"
api_url = ""                 # empty = Discord; set to point REST (and so the gateway lookup) elsewhere
agent = "main"
allow_users = ["80351110224678912"]
admins = ["80351110224678912"]
allowed_channels = []        # empty = all channels it can see
require_mention = true
auto_thread = true           # a mention in a channel opens a thread for the conversation
allow_roles = []             # role ids whose members may talk, besides allow_users
admin_roles = []             # role ids whose members are admins
guilds = []                  # empty = every server the bot is in
`

const apiExample = `
[channels.api]
tokens = [{ name = "ci", token = "${SWITCHBOARD_API_TOKEN}", admin = false }]
`

var channelEnv = MapEnv(map[string]string{
	"SLACK_APP_TOKEN":       "xapp-1-canary",
	"SLACK_BOT_TOKEN":       "xoxb-canary",
	"SLACK_SIGNING_SECRET":  "signing-canary",
	"DISCORD_BOT_TOKEN":     "discord-canary",
	"SWITCHBOARD_API_TOKEN": "api-token-canary-0123456789",
})

func TestChannelExamples(t *testing.T) {
	cfg, err := Parse("switchboard.toml", []byte(slackExample+discordExample+apiExample), t.TempDir(), channelEnv)
	if err != nil {
		t.Fatal(err)
	}
	wantSlack := &Slack{
		Chat: Chat{Enabled: true, Agent: "main", AllowUsers: []string{"U012ABCDEF"}, Admins: []string{"U012ABCDEF"},
			RequireMention: true, QueueMode: "followup", EditInterval: 1500 * time.Millisecond, AllowedChannels: []string{}},
		Mode: "socket", AppToken: "xapp-1-canary", BotToken: "xoxb-canary", SigningSecret: "signing-canary", APIURL: "https://slack.com/api/",
	}
	if d := cmp.Diff(wantSlack, cfg.Channels.Slack); d != "" {
		t.Errorf("slack (-want +got):\n%s", d)
	}
	wantDiscord := &Discord{
		Chat: Chat{Enabled: true, Agent: "main", AllowUsers: []string{"80351110224678912"}, Admins: []string{"80351110224678912"},
			RequireMention: true, QueueMode: "followup", EditInterval: time.Second, AllowedChannels: []string{}},
		Token: "discord-canary", ApplicationID: "123", AutoThread: true,
		AllowRoles: []string{}, AdminRoles: []string{}, Guilds: []string{},
	}
	if d := cmp.Diff(wantDiscord, cfg.Channels.Discord); d != "" {
		t.Errorf("discord (-want +got):\n%s", d)
	}
	wantAPI := &API{Enabled: true, Agent: "main", QueueMode: "followup", Tokens: []APIToken{{Name: "ci", Token: "api-token-canary-0123456789"}}}
	if d := cmp.Diff(wantAPI, cfg.Channels.API); d != "" {
		t.Errorf("api (-want +got):\n%s", d)
	}
	secrets := strings.Join(cfg.Secrets(), " ")
	for _, s := range []string{"xapp-1-canary", "xoxb-canary", "signing-canary", "discord-canary", "api-token-canary-0123456789"} {
		if !strings.Contains(secrets, s) {
			t.Errorf("Secrets() misses %s", s)
		}
	}
	var out strings.Builder
	if err := cfg.WriteMasked(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "canary") {
		t.Errorf("WriteMasked shows a secret:\n%s", out.String())
	}
}

func TestChannelDisabledAndModes(t *testing.T) {
	cfg, err := Parse("switchboard.toml", []byte(`
[channels.telegram]
enabled = false
[channels.slack]
mode = "http"
bot_token = "xoxb-1"
signing_secret = "s"
[channels.discord]
enabled = false
token = ""
`), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Channels.Telegram != nil || cfg.Channels.Discord != nil {
		t.Errorf("disabled channels are on: %+v %+v", cfg.Channels.Telegram, cfg.Channels.Discord)
	}
	if s := cfg.Channels.Slack; s == nil || s.Mode != SlackHTTP || s.AppToken != "" {
		t.Errorf("slack http mode: %+v", s)
	}
}

func TestChannelErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"slack socket without app token", "[channels.slack]\nbot_token = \"xoxb-1\"\n",
			[]string{"channels.slack.app_token: is missing"}},
		{"slack http without signing secret", "[channels.slack]\nmode = \"http\"\nbot_token = \"xoxb-1\"\n",
			[]string{"channels.slack.signing_secret: is missing"}},
		{"slack wrong tokens", "[channels.slack]\nbot_token = \"xoxp-1\"\napp_token = \"xoxb-2\"\n",
			[]string{"channels.slack.app_token: does not look like an app-level token", "channels.slack.bot_token: does not look like a bot token"}},
		{"slack user by name", "[channels.slack]\nbot_token = \"xoxb-1\"\napp_token = \"xapp-1\"\nadmins = [\"alice\"]\n",
			[]string{`channels.slack.admins[0]: "alice" is not a Slack member id`}},
		{"discord bad ids", "[channels.discord]\ntoken = \"t\"\napplication_id = \"abc\"\nadmin_roles = [\"x\"]\n",
			[]string{`channels.discord.admin_roles[0]: "x" is not a Discord id`, `channels.discord.application_id: "abc" is not an application id`}},
		{"discord unknown key", "[channels.discord]\ntoken = \"t\"\nauto_threads = true\n",
			[]string{"unknown key channels.discord.auto_threads (did you mean auto_thread?)"}},
		{"telegram has no allowed_channels", "[channels.telegram]\ntoken = \"1:a\"\nallowed_channels = []\n",
			[]string{"unknown key channels.telegram.allowed_channels"}},
		{"api without tokens", "[channels.api]\n", []string{"channels.api.tokens: is missing"}},
		{"api short token", "[channels.api]\ntokens = [{ name = \"ci\", token = \"short\" }]\n",
			[]string{"channels.api.tokens[0].token: is too short"}},
		{"api duplicate names", "[channels.api]\ntokens = [{ name = \"ci\", token = \"0123456789abcdef\" }, { name = \"ci\", token = \"0123456789abcdeg\" }]\n",
			[]string{`channels.api.tokens[1].name: "ci" is used by two tokens`}},
		{"bad common key", "[channels.slack]\nbot_token = \"xoxb-1\"\napp_token = \"xapp-1\"\nagent = \"nobody\"\n",
			[]string{`channels.slack.agent: "nobody" is not a configured agent`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("switchboard.toml", []byte(tc.doc), t.TempDir(), nil)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}
