package gateway

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the gateway's Prometheus instruments (served at /metrics by
// serve).
type Metrics struct {
	Inbound         *prometheus.CounterVec
	Duplicates      *prometheus.CounterVec
	Actions         *prometheus.CounterVec
	Turns           *prometheus.CounterVec
	TurnSeconds     prometheus.Histogram
	ApprovalsAsked  prometheus.Counter
	ApprovalSeconds prometheus.Histogram
	Outbound        *prometheus.CounterVec
	OutboxRetries   prometheus.Counter
	StreamEdits     *prometheus.CounterVec
	Busy            prometheus.Gauge       // conversations with a running worker
	Tokens          *prometheus.CounterVec // model tokens by kind: input, output, cached
	ProviderSeconds prometheus.Histogram   // one model call, observed by the host's provider wrapper
}

// NewMetrics creates the instruments and registers them with reg (nil:
// not registered, for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Inbound:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_inbound_total", Help: "Inbound chat messages by channel."}, []string{"channel"}),
		Duplicates:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_inbound_duplicates_total", Help: "Inbound events dropped as platform retries."}, []string{"channel"}),
		Actions:         prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_actions_total", Help: "Button presses by channel."}, []string{"channel"}),
		Turns:           prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_turns_total", Help: "Finished turns by stop reason."}, []string{"stop_reason"}),
		TurnSeconds:     prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_turn_seconds", Help: "Turn duration.", Buckets: prometheus.ExponentialBuckets(0.01, 2.5, 12)}),
		ApprovalsAsked:  prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_approvals_asked_total", Help: "Approvals posted."}),
		ApprovalSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_approval_latency_seconds", Help: "Time from ask to decision.", Buckets: prometheus.ExponentialBuckets(1, 3, 12)}),
		Outbound:        prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_outbound_total", Help: "Delivered outbox items by channel and kind."}, []string{"channel", "kind"}),
		OutboxRetries:   prometheus.NewCounter(prometheus.CounterOpts{Name: "switchboard_outbox_retries_total", Help: "Failed outbound deliveries that were retried or given up."}),
		StreamEdits:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_stream_edits_total", Help: "Streaming sends and edits by channel."}, []string{"channel"}),
		Busy:            prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchboard_busy_conversations", Help: "Conversations whose queue is being worked (queue depth in conversations)."}),
		Tokens:          prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_model_tokens_total", Help: "Model tokens by kind (input, output, cached)."}, []string{"kind"}),
		ProviderSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_provider_seconds", Help: "Duration of one model call.", Buckets: prometheus.ExponentialBuckets(0.05, 2, 12)}),
	}
	if reg != nil {
		reg.MustRegister(m.Inbound, m.Duplicates, m.Actions, m.Turns, m.TurnSeconds, m.ApprovalsAsked, m.ApprovalSeconds, m.Outbound, m.OutboxRetries, m.StreamEdits, m.Busy, m.Tokens, m.ProviderSeconds)
	}
	return m
}
