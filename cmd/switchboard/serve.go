package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/channels"
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
	s.info = true
	a, err := openApp(ctx, s)
	if err != nil {
		return err
	}
	defer a.Close()
	cfg := a.cfg

	plan, err := a.planServe(ctx, channelTable())
	if err != nil {
		return err
	}
	g, mux, reg, built, notices, modelProblem := plan.g, plan.mux, plan.reg, plan.built, plan.notices, plan.modelProblem
	agents, adapters := plan.agents, plan.adapters

	ready := make(chan struct{})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-ready:
		default:
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		if down := g.Down(); len(down) > 0 {
			// Ready to serve the other channels; say which are down.
			var b strings.Builder
			for _, name := range slices.Sorted(maps.Keys(down)) {
				fmt.Fprintf(&b, "channel %s down: %s\n", name, down[name])
			}
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("ready (degraded)\n" + b.String()))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
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

	// The gateway stops before the store closes on every exit path: it runs
	// on its own context, which a server failure cancels too.
	gwCtx, stopGateway := context.WithCancel(ctx)
	defer stopGateway()
	gwDone := make(chan error, 1)
	go func() { gwDone <- g.Run(gwCtx, grace) }()
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
			notices.model(advice)
		})
	}()
	close(ready)
	fmt.Fprintf(s.err, "switchboard: serving on http://%s (agents: %d, channels: %d)\n", ln.Addr(), len(agents), len(adapters))
	for _, b := range built {
		if b.banner != "" {
			fmt.Fprintf(s.err, "switchboard: "+b.banner+"\n", ln.Addr())
		}
	}
	if modelProblem != "" {
		fmt.Fprintln(s.err, "switchboard:", modelProblem)
	}

	var runErr error
	select {
	case runErr = <-gwDone:
		gwDone = nil
	case err := <-srvErr:
		runErr = fmt.Errorf("http server: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if gwDone != nil {
		stopGateway()
		if err := <-gwDone; runErr == nil {
			runErr = err
		}
	}
	if runErr == nil || errors.Is(runErr, context.Canceled) {
		return nil
	}
	return runErr
}

// banner is the web page's notice line: the model's problem and the
// channels that are down, so a person on the page sees why a chat is silent.
type banner struct {
	mu    sync.Mutex
	show  func(string) // set before the gateway runs
	about string
	down  map[string]string
}

func (b *banner) model(advice string) {
	b.mu.Lock()
	b.about = advice
	b.mu.Unlock()
	b.refresh()
}

func (b *banner) channel(name string, err error) {
	b.mu.Lock()
	if b.down == nil {
		b.down = map[string]string{}
	}
	if err == nil {
		delete(b.down, name)
	} else {
		b.down[name] = err.Error()
	}
	b.mu.Unlock()
	b.refresh()
}

func (b *banner) refresh() {
	b.mu.Lock()
	var lines []string
	if b.about != "" {
		lines = append(lines, b.about)
	}
	for _, name := range slices.Sorted(maps.Keys(b.down)) {
		lines = append(lines, fmt.Sprintf("The %s channel is down and is retried: %s", name, b.down[name]))
	}
	show := b.show
	b.mu.Unlock()
	if show != nil {
		show(strings.Join(lines, " · "))
	}
}

// servePlan is what serve runs: the gateway with its channels, and the HTTP
// routes they serve.
type servePlan struct {
	g            *gateway.Gateway
	mux          *http.ServeMux
	reg          *prometheus.Registry
	built        []builtChannel
	notices      *banner
	modelProblem string
	agents       map[string]*agentcore.Agent
	adapters     []channels.Adapter
}

// planServe builds every agent and the channels of rows (serve's
// channelTable; a test may add a row) into a gateway.
func (a *app) planServe(ctx context.Context, rows []channelRow) (*servePlan, error) {
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
			return nil, err
		}
		agents[name] = ag
		ac := cfg.Agents[name]
		pc := cfg.Providers[ac.Provider]
		agentOpts[name] = gateway.AgentOptions{Approvers: ac.Approvers, ApprovalRoutes: ac.ApprovalRoutes, Vision: pc.Vision, MaxTasks: ac.MaxTasks}
		if ag.Config().Model == "" && modelProblem == "" {
			modelProblem = "No model is configured, so the agent cannot answer yet. Set SWITCHBOARD_MODEL (and OPENAI_BASE_URL / OPENAI_API_KEY for a remote endpoint), or `model` under [providers." + ac.Provider + "] in switchboard.toml, then restart `switchboard serve`."
		}
	}

	notices := &banner{}
	built, chOpts, err := buildChannels(a, cfg, rows)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	var adapters []channels.Adapter
	var webAdapter *web.Adapter
	for _, b := range built {
		adapters = append(adapters, b.adapter)
		for pattern, h := range b.routes {
			mux.Handle(pattern, h)
		}
		if w, ok := b.adapter.(*web.Adapter); ok {
			webAdapter = w
		}
	}
	if webAdapter != nil {
		notices.show = webAdapter.SetNotice
	}
	notices.model(modelProblem)

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
		Prune:           true,
		ChannelState:    notices.channel,
	}, adapters...)
	if err != nil {
		return nil, err
	}

	return &servePlan{g: g, mux: mux, reg: reg, built: built, notices: notices, modelProblem: modelProblem, agents: agents, adapters: adapters}, nil
}
