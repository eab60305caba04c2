package discordtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// RequiredIntents are the intents the fake insists on (guild messages,
// direct messages, message content); an IDENTIFY without them is closed
// with 4014, as Discord closes it when Message Content is not enabled.
const RequiredIntents = 1<<9 | 1<<12 | intentMessageContent

const (
	intentMessageContent = 1 << 15
	// flagGatewayMessageContentLimited is the application flag saying the
	// message content intent is switched on (GATEWAY_MESSAGE_CONTENT_LIMITED:
	// an application in under 100 servers; verified ones get 1<<18).
	flagGatewayMessageContentLimited = 1 << 19
)

// frame is one gateway payload.
type frame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int64          `json:"s,omitempty"`
	T  string          `json:"t,omitempty"`
}

// session is a gateway session: what a RESUME can replay.
type session struct {
	id  string
	seq int64
	log []frame // dispatches, for replay
}

// conn is one websocket connection.
type conn struct {
	ws   *websocket.Conn
	out  chan frame
	done chan struct{}
	once sync.Once
	live bool // identified or resumed: dispatches go out
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		c.ws.Close()
	})
}

// gateway is the fake's websocket side; its fields are guarded by
// Server.mu.
type gateway struct {
	heartbeat  time.Duration
	sess       *session
	cur        *conn
	all        []*conn
	wg         sync.WaitGroup
	noAcks     bool
	refuse     bool
	connects   int
	identifies int
	resumes    int // successful
	heartbeats int
	refused    int
	intents    int
}

func (g *gateway) init() { g.heartbeat = 41250 * time.Millisecond }

func (g *gateway) url(s *Server) string {
	return "ws" + strings.TrimPrefix(s.srv.URL, "http") + "/gw"
}

// dispatchLocked sends a dispatch on the live connection, or keeps it in
// the session for a RESUME. Without a session (never identified, or
// invalidated) it is lost, as on Discord.
func (g *gateway) dispatchLocked(s *Server, typ string, data any) {
	if g.sess == nil {
		return
	}
	g.sess.seq++
	seq := g.sess.seq
	f := frame{Op: 0, D: jsonBytes(data), S: &seq, T: typ}
	g.sess.log = append(g.sess.log, f)
	if len(g.sess.log) > 2000 {
		g.sess.log = g.sess.log[len(g.sess.log)-2000:]
	}
	if g.cur != nil && g.cur.live {
		g.sendLocked(g.cur, f)
	}
	s.notifyLocked()
}

// sendLocked queues a frame on c; a connection that does not read is cut.
func (g *gateway) sendLocked(c *conn, f frame) {
	select {
	case c.out <- f:
	default:
		c.close()
	}
}

func (g *gateway) serveWS(s *Server, w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	refuse := g.refuse
	if refuse {
		g.refused++
		s.notifyLocked()
	}
	s.mu.Unlock()
	if refuse {
		http.Error(w, "gateway unavailable", http.StatusServiceUnavailable)
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{ws: ws, out: make(chan frame, 4096), done: make(chan struct{})}
	s.mu.Lock()
	if g.cur != nil {
		g.cur.close()
	}
	g.cur = c
	g.all = append(g.all, c)
	g.connects++
	g.wg.Add(1)
	hello := frame{Op: 10, D: jsonBytes(map[string]any{"heartbeat_interval": g.heartbeat.Milliseconds()})}
	g.sendLocked(c, hello)
	s.notifyLocked()
	s.mu.Unlock()
	go func() {
		defer g.wg.Done()
		g.write(c)
	}()
	g.read(s, c)
}

func (g *gateway) write(c *conn) {
	for {
		select {
		case <-c.done:
			return
		case f := <-c.out:
			c.ws.SetWriteDeadline(time.Now().Add(5 * time.Second))
			if err := c.ws.WriteJSON(f); err != nil {
				c.close()
				return
			}
		}
	}
}

// read handles the client's payloads until the connection ends.
func (g *gateway) read(s *Server, c *conn) {
	defer func() {
		c.close()
		s.mu.Lock()
		if g.cur == c {
			g.cur = nil
		}
		s.notifyLocked()
		s.mu.Unlock()
	}()
	for {
		var f frame
		if err := c.ws.ReadJSON(&f); err != nil {
			return
		}
		s.mu.Lock()
		stop := g.handleLocked(s, c, f)
		s.mu.Unlock()
		if stop {
			return
		}
	}
}

func (g *gateway) handleLocked(s *Server, c *conn, f frame) (stop bool) {
	switch f.Op {
	case 1: // heartbeat
		g.heartbeats++
		s.notifyLocked()
		if !g.noAcks {
			g.sendLocked(c, frame{Op: 11})
		}
	case 2: // identify
		var id struct {
			Token   string `json:"token"`
			Intents int    `json:"intents"`
		}
		json.Unmarshal(f.D, &id)
		g.intents = id.Intents
		if id.Token != "Bot "+s.token {
			g.closeWith(c, 4004, "Authentication failed.")
			return true
		}
		if id.Intents&RequiredIntents != RequiredIntents || s.noContent && id.Intents&intentMessageContent != 0 {
			g.closeWith(c, 4014, "Disallowed intent(s).")
			return true
		}
		g.identifies++
		g.sess = &session{id: randomID()}
		c.live = true
		g.dispatchLocked(s, "READY", map[string]any{
			"v": 9, "session_id": g.sess.id, "resume_gateway_url": g.url(s),
			"user":        userJSON(s.users[BotID]),
			"application": map[string]any{"id": AppID, "flags": 0},
			"guilds":      []any{map[string]any{"id": GuildID, "unavailable": true}, map[string]any{"id": OtherGuildID, "unavailable": true}},
		})
	case 6: // resume
		var r struct {
			Token     string `json:"token"`
			SessionID string `json:"session_id"`
			Seq       int64  `json:"seq"`
		}
		json.Unmarshal(f.D, &r)
		if r.Token != "Bot "+s.token {
			g.closeWith(c, 4004, "Authentication failed.")
			return true
		}
		if g.sess == nil || g.sess.id != r.SessionID {
			g.sendLocked(c, frame{Op: 9, D: json.RawMessage("false")}) // invalid session: identify
			return false
		}
		g.resumes++
		c.live = true
		for _, old := range g.sess.log {
			if *old.S > r.Seq {
				g.sendLocked(c, old)
			}
		}
		g.dispatchLocked(s, "RESUMED", map[string]any{})
	}
	return false
}

func (g *gateway) closeWith(c *conn, code int, text string) {
	c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
	c.close()
}

func randomID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (g *gateway) closeAll(s *Server) {
	s.mu.Lock()
	for _, c := range g.all {
		c.close()
	}
	s.mu.Unlock()
	g.wg.Wait()
}

// DropConnection cuts the gateway connection without a close frame (a
// network failure). The session survives: a RESUME replays what was
// dispatched meanwhile.
func (s *Server) DropConnection() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gw.cur != nil {
		s.gw.cur.close()
		s.gw.cur = nil
	}
	s.notifyLocked()
}

// InvalidateSession forgets the session and cuts the connection: the
// client's RESUME gets op 9 (invalid session) and it must IDENTIFY; what is
// posted until then is never dispatched.
func (s *Server) InvalidateSession() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gw.sess = nil
	if s.gw.cur != nil {
		s.gw.cur.close()
		s.gw.cur = nil
	}
	s.notifyLocked()
}

// StopAcks makes the gateway stop (or resume) answering heartbeats, while
// keeping the connection open: a zombie connection.
func (s *Server) StopAcks(stop bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gw.noAcks = stop
}

// RefuseConnections makes the gateway refuse (or accept again) new
// websocket connections, with 503: an outage.
func (s *Server) RefuseConnections(refuse bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gw.refuse = refuse
}

// GatewayStats counts what happened on the gateway.
type GatewayStats struct {
	Connects, Identifies, Resumes, Heartbeats int
	Refused                                   int  // connections refused by RefuseConnections
	Intents                                   int  // of the last IDENTIFY
	Live                                      bool // a connection is identified or resumed
}

// Stats returns the gateway's counters.
func (s *Server) Stats() GatewayStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statsLocked()
}

func (s *Server) statsLocked() GatewayStats {
	g := &s.gw
	return GatewayStats{Connects: g.connects, Identifies: g.identifies, Resumes: g.resumes, Heartbeats: g.heartbeats,
		Refused: g.refused, Intents: g.intents, Live: g.cur != nil && g.cur.live}
}

// WaitGateway waits until the gateway's counters satisfy cond.
func (s *Server) WaitGateway(ctx context.Context, what string, cond func(GatewayStats) bool) error {
	return s.Wait(ctx, what, func() bool { return cond(s.statsLocked()) })
}
