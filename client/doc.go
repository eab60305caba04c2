// Package client is a Go client of a switchboard gateway's HTTP API
// (the api channel): typed calls for every route, an event stream that
// reconnects with backoff and resumes by Last-Event-ID, and an Accumulator
// that reassembles the transcript from the stream the way the stream's
// identities demand (seqId is a per-run replay cursor, (type, otid) a
// slice, uuid a message, toolCallId a call; see Accumulator).
//
// Quick start:
//
//	c, _ := client.New("http://127.0.0.1:7700", os.Getenv("SWITCHBOARD_API_TOKEN"), client.Options{})
//	conv, _ := c.CreateConversation(ctx, client.NewConversation{Title: "triage"})
//	f, _ := c.Follow(ctx, conv.ID, client.StreamOptions{})
//	q, _ := c.Send(ctx, conv.ID, client.NewMessage{Text: "why did CI fail?"}, client.SendOptions{})
//	for {
//		ev, err := f.Next(ctx)
//		if err != nil { … }
//		if ev.Type == client.EventTurnEnd && ev.InputID == q.InputID {
//			fmt.Println(f.Accumulator().Answer(q.InputID))
//			break
//		}
//	}
//
// The package imports nothing of the rest of the project. A Client is safe
// for concurrent use; a Stream, Follower or Accumulator is used by one
// goroutine.
package client
