package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
	"github.com/switchboard-gw/switchboard/channels/telegram"
	"github.com/switchboard-gw/switchboard/channels/web"
	"github.com/switchboard-gw/switchboard/gateway"
	"github.com/switchboard-gw/switchboard/internal/httpguard"
)

func newServeCmd(s *streams) *cobra.Command {
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the gateway: the configured chat channels, the local web page, health and metrics",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), s, grace)
		},
	}
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "on SIGTERM, how long running turns get to reach a step boundary")
	return cmd
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func runServe(ctx context.Context, s *streams, grace time.Duration) error {
	a, err := openApp(ctx, s)
	if err != nil {
		return err
	}
	defer a.Close()
	cfg := a.cfg

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := gateway.NewMetrics(reg)
	observe := func(d time.Duration) { metrics.ProviderSeconds.Observe(d.Seconds()) }

	agents := map[string]*agentcore.Agent{}
	agentOpts := map[string]gateway.AgentOptions{}
	modelProblem := ""
	for _, name := range agentNames(cfg) {
		ag, err := a.agent(ctx, name, agentOptions{allowNoModel: true, observeStep: observe})
		if err != nil {
			return err
		}
		agents[name] = ag
		ac := cfg.Agents[name]
		pc := cfg.Providers[ac.Provider]
		agentOpts[name] = gateway.AgentOptions{Approvers: ac.Approvers, ApprovalRoutes: ac.ApprovalRoutes, Vision: pc.Vision}
		if ag.Config().Model == "" && modelProblem == "" {
			modelProblem = "No model is configured, so the agent cannot answer yet. Set SWITCHBOARD_MODEL (and OPENAI_BASE_URL / OPENAI_API_KEY for a remote endpoint), or `model` under [providers." + ac.Provider + "] in switchboard.toml, then restart `switchboard serve`."
		}
	}

	var adapters []channels.Adapter
	chOpts := map[string]gateway.ChannelOptions{}
	mux := http.NewServeMux()
	var webAdapter *web.Adapter
	webLink := ""
	if cfg.Channels.Web.Enabled {
		token := cfg.Channels.Web.Token
		shown := token == ""
		if shown {
			token = randomToken()
			a.redactor.Add(token)
		}
		webAdapter = web.New(web.Options{Token: token, Logger: a.log})
		if modelProblem != "" {
			webAdapter.SetNotice(modelProblem)
		}
		adapters = append(adapters, webAdapter)
		chOpts["web"] = gateway.ChannelOptions{Agent: "main", AllowAll: true, BrowseByConversation: true, QueueMode: cfg.Channels.Web.QueueMode, EditInterval: cfg.Channels.Web.EditInterval}
		if _, ok := agents["main"]; !ok {
			chOpts["web"] = gateway.ChannelOptions{AllowAll: true, BrowseByConversation: true, QueueMode: cfg.Channels.Web.QueueMode, EditInterval: cfg.Channels.Web.EditInterval}
		}
		mux.Handle("/", webAdapter.Handler())
		if shown {
			webLink = token
		}
	}

	if tc := cfg.Channels.Telegram; tc != nil {
		tg, err := telegram.New(telegram.Options{
			Token:         tc.Token,
			APIURL:        tc.APIURL,
			Mode:          tc.Mode,
			WebhookURL:    tc.WebhookURL,
			WebhookSecret: tc.WebhookSecret,
			Logger:        a.log,
		})
		if err != nil {
			return err
		}
		adapters = append(adapters, tg)
		chOpts[telegram.Name] = gateway.ChannelOptions{
			Agent:          tc.Agent,
			AllowUsers:     tc.AllowUsers,
			Admins:         tc.Admins,
			RequireMention: tc.RequireMention,
			QueueMode:      tc.QueueMode,
			EditInterval:   tc.EditInterval,
		}
		mux.Handle("POST /telegram/webhook", tg.WebhookHandler())
	}

	g, err := gateway.New(gateway.Options{
		Store:           a.store,
		Agents:          agents,
		AgentStore:      a.store,
		AgentOptions:    agentOpts,
		Channels:        chOpts,
		ApprovalTimeout: cfg.Approvals.Timeout,
		Logger:          a.log,
		Metrics:         metrics,
		ModelProblem:    modelProblem,
	}, adapters...)
	if err != nil {
		return err
	}

	ready := make(chan struct{})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-ready:
			_, _ = w.Write([]byte("ready\n"))
		default:
			http.Error(w, "starting", http.StatusServiceUnavailable)
		}
	})
	mux.Handle("GET /metrics", httpguard.Metrics(cfg.HTTP.MetricsToken, promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))

	ln, err := net.Listen("tcp", cfg.HTTP.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s (set [http] listen to a free address): %w", cfg.HTTP.Listen, err)
	}
	guard, err := httpguard.New(httpguard.Options{Listen: cfg.HTTP.Listen, Addr: ln.Addr().String(),
		PublicURL: cfg.HTTP.PublicURL, AllowedHosts: cfg.HTTP.AllowedHosts, Logger: a.log})
	if err != nil {
		ln.Close()
		return fmt.Errorf("[http]: %w", err)
	}
	if hint := guard.Hint(); hint != "" {
		fmt.Fprintln(s.err, "switchboard:", hint)
	}
	srv := guard.Server(mux) // Host check, body bound, timeouts
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()

	gwDone := make(chan error, 1)
	go func() { gwDone <- g.Run(ctx, grace) }()
	probeDone := make(chan struct{})
	probeCtx, stopProbe := context.WithCancel(ctx)
	defer func() { stopProbe(); <-probeDone }()
	go func() {
		defer close(probeDone)
		if modelProblem != "" {
			return
		}
		pc := cfg.Providers[cfg.Agents[agentNames(cfg)[0]].Provider]
		watchModel(probeCtx, pc.BaseURL, pc.APIKey, 30*time.Second, func(advice string) {
			if advice != "" {
				a.log.Warn("model endpoint problem", "advice", advice)
			}
			g.SetModelNotice(advice)
			if webAdapter != nil {
				webAdapter.SetNotice(advice)
			}
		})
	}()
	close(ready)
	fmt.Fprintf(s.err, "switchboard: serving on http://%s (agents: %d, channels: %d)\n", ln.Addr(), len(agents), len(adapters))
	if webLink != "" {
		// Shown once on the terminal, like Jupyter; never logged.
		fmt.Fprintf(s.err, "switchboard: open the web page (login link, shown once): http://%s/?token=%s\n", ln.Addr(), webLink)
	} else if webAdapter != nil {
		fmt.Fprintf(s.err, "switchboard: web page at http://%s/ (log in with [channels.web] token)\n", ln.Addr())
	}
	if modelProblem != "" {
		fmt.Fprintln(s.err, "switchboard:", modelProblem)
	}

	var runErr error
	select {
	case runErr = <-gwDone:
	case err := <-srvErr:
		runErr = fmt.Errorf("http server: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if runErr == nil || errors.Is(runErr, context.Canceled) {
		return nil
	}
	return runErr
}
