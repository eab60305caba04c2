package discordtest

import (
	"context"
	"fmt"
	"time"
)

// interactionJSONLocked is an INTERACTION_CREATE payload.
func (s *Server) interactionJSONLocked(in *Interaction, roles []string, data map[string]any, msgID string) map[string]any {
	out := map[string]any{
		"id": in.ID, "application_id": AppID, "type": in.Type, "token": in.Token,
		"channel_id": in.ChannelID, "data": data, "version": 1,
	}
	c := s.channels[in.ChannelID]
	if c != nil && c.GuildID != "" {
		out["guild_id"] = c.GuildID
		out["member"] = map[string]any{"user": userJSON(in.User), "roles": nonNil(roles)}
	} else {
		out["user"] = userJSON(in.User)
	}
	if msgID != "" {
		if m, ok := s.byID[msgID]; ok {
			out["message"] = s.messageJSONLocked(m, false)
		} else {
			out["message"] = map[string]any{"id": msgID, "channel_id": in.ChannelID}
		}
	}
	return out
}

func (s *Server) newInteractionLocked(typ int, channelID, user string) *Interaction {
	u, ok := s.users[user]
	if !ok {
		u = User{ID: user, Username: "user" + user}
	}
	id := s.nextIDLocked(time.Now())
	in := &Interaction{ID: id, Token: "itok-" + randomID(), ChannelID: channelID, Type: typ, User: u}
	s.interactions[id] = in
	return in
}

// PressButton dispatches a button press (INTERACTION_CREATE, component) on
// message msgID by user and returns the interaction id at once.
func (s *Server) PressButton(channelID, msgID, customID, user string, roles ...string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.newInteractionLocked(3, channelID, user)
	s.gw.dispatchLocked(s, "INTERACTION_CREATE", s.interactionJSONLocked(in, roles,
		map[string]any{"custom_id": customID, "component_type": 2}, msgID))
	return in.ID
}

// Command dispatches a slash command /name with an "args" option (none when
// args is empty) by user and returns the interaction id.
func (s *Server) Command(channelID, user, name, args string, roles ...string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.newInteractionLocked(2, channelID, user)
	data := map[string]any{"id": "cmd-" + name, "name": name, "type": 1}
	if args != "" {
		data["options"] = []any{map[string]any{"name": "args", "type": 3, "value": args}}
	}
	s.gw.dispatchLocked(s, "INTERACTION_CREATE", s.interactionJSONLocked(in, roles, data, ""))
	return in.ID
}

// WaitCallback waits until the bot answered the interaction's /callback and
// returns the interaction.
func (s *Server) WaitCallback(ctx context.Context, id string) (Interaction, error) {
	err := s.Wait(ctx, "callback of interaction "+id, func() bool {
		in, ok := s.interactions[id]
		return ok && len(in.Callbacks) > 0
	})
	if err != nil {
		return Interaction{}, err
	}
	in, _ := s.Interaction(id)
	return in, nil
}

// WaitFollowup waits for the interaction's first followup message and
// returns its content.
func (s *Server) WaitFollowup(ctx context.Context, id string) (string, error) {
	err := s.Wait(ctx, "followup of interaction "+id, func() bool {
		in, ok := s.interactions[id]
		return ok && len(in.Followups) > 0
	})
	if err != nil {
		return "", err
	}
	in, _ := s.Interaction(id)
	if in.Followups[0].Flags&(1<<6) == 0 {
		return "", fmt.Errorf("followup of interaction %s is not ephemeral", id)
	}
	return in.Followups[0].Content, nil
}
