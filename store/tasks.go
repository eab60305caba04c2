package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/switchboard-gw/switchboard/agentcore"
	"github.com/switchboard-gw/switchboard/gateway"
)

// Sub-agent tasks: the agentcore.Tasks port (what the loop reads) and the
// gateway.TaskStore port (the task's start, slot and end, each in the
// transaction of the queue and outbox changes that go with it).

var (
	_ agentcore.Tasks   = (*DB)(nil)
	_ gateway.TaskStore = (*DB)(nil)
)

const taskColumns = `id, agent_id, parent_conversation_id, parent_location, parent_tool_call_id,
	conversation_id, type, description, prompt, spec, fork, background, depth, requester, status,
	report, error, report_file, created, started, ended, input_tokens, output_tokens, cached_tokens,
	status_post`

const openTaskStates = `('queued', 'running', 'waiting')`

func scanTask(s scanner) (agentcore.Task, error) {
	var t agentcore.Task
	var spec, status string
	var fork, background int
	var created, started, ended int64
	if err := s.Scan(&t.ID, &t.AgentID, &t.ParentConversationID, &t.ParentLocation, &t.ParentToolCallID,
		&t.ConversationID, &t.Type, &t.Description, &t.Prompt, &spec, &fork, &background, &t.Depth,
		&t.Requester, &status, &t.Report, &t.Error, &t.ReportFile, &created, &started, &ended,
		&t.Usage.InputTokens, &t.Usage.OutputTokens, &t.Usage.CachedTokens, &t.StatusPost); err != nil {
		return agentcore.Task{}, err
	}
	if err := json.Unmarshal([]byte(spec), &t.Spec); err != nil {
		return agentcore.Task{}, fmt.Errorf("task %s spec: %w", t.ID, err)
	}
	t.Fork, t.Background = fork != 0, background != 0
	t.Status = agentcore.TaskStatus(status)
	t.Created, t.Started, t.Ended = fromNanos(created), fromNanos(started), fromNanos(ended)
	t.Usage.Reported = t.Usage.InputTokens+t.Usage.OutputTokens > 0
	return t, nil
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func queryTasks(ctx context.Context, q queryer, query string, args ...any) ([]agentcore.Task, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []agentcore.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func taskBy(ctx context.Context, q queryer, where string, arg any) (agentcore.Task, error) {
	t, err := scanTask(q.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM tasks WHERE `+where, arg))
	return t, errNoRows(err)
}

// Task returns the task with the given id, or ErrNotFound.
func (db *DB) Task(ctx context.Context, id string) (agentcore.Task, error) {
	t, err := scanTask(db.stmts.taskByID.QueryRowContext(ctx, id))
	if err = errNoRows(err); err != nil {
		return agentcore.Task{}, fmt.Errorf("task %s: %w", id, err)
	}
	return t, nil
}

// TaskOfConversation returns the task whose child conversation this is,
// or ErrNotFound.
func (db *DB) TaskOfConversation(ctx context.Context, conversationID string) (agentcore.Task, error) {
	// Asked twice on every turn (is this conversation a task's child?),
	// and the answer is almost always no: a one-column probe first (the
	// driver reads every column's name and type for each query), and
	// prepared statements, so that no turn parses them. Task rows are
	// never deleted, so a row the probe found is there for the second.
	var one int
	err := db.stmts.isTaskConv.QueryRowContext(pointRead(ctx), conversationID).Scan(&one)
	var t agentcore.Task
	if err == nil {
		t, err = scanTask(db.stmts.taskOfConv.QueryRowContext(pointRead(ctx), conversationID))
	}
	if err = errNoRows(err); err != nil {
		return agentcore.Task{}, fmt.Errorf("task of conversation %s: %w", conversationID, err)
	}
	return t, nil
}

// CallTasks returns the tasks the given calls of a parent conversation
// started, keyed by call id.
func (db *DB) CallTasks(ctx context.Context, parentConversationID string, callIDs []string) (map[string]agentcore.Task, error) {
	out := map[string]agentcore.Task{}
	if len(callIDs) == 0 {
		return out, nil
	}
	args := []any{parentConversationID}
	for _, id := range callIDs {
		args = append(args, id)
	}
	ts, err := queryTasks(ctx, db.r, `SELECT `+taskColumns+` FROM tasks WHERE parent_conversation_id = ?
		AND parent_tool_call_id IN (?`+strings.Repeat(`, ?`, len(callIDs)-1)+`) ORDER BY created, rowid`, args...)
	if err != nil {
		return nil, fmt.Errorf("tasks of conversation %s: %w", parentConversationID, err)
	}
	for _, t := range ts {
		out[t.ParentToolCallID] = t
	}
	return out, nil
}

// ConversationTasks returns the tasks a conversation started: the
// unfinished first, then the newest; limit <= 0 means all.
func (db *DB) ConversationTasks(ctx context.Context, parentConversationID string, limit int) ([]agentcore.Task, error) {
	ts, err := queryTasks(ctx, db.r, `SELECT `+taskColumns+` FROM tasks WHERE parent_conversation_id = ?
		ORDER BY (status IN `+openTaskStates+`) DESC, created DESC, rowid DESC LIMIT ?`, parentConversationID, limitArg(limit))
	if err != nil {
		return nil, fmt.Errorf("tasks of conversation %s: %w", parentConversationID, err)
	}
	return ts, nil
}

// DetachTask makes an unfinished task a background task and returns it.
func (db *DB) DetachTask(ctx context.Context, id string) (agentcore.Task, error) {
	var t agentcore.Task
	err := db.write(ctx, "DetachTask", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE tasks SET background = 1 WHERE id = ? AND status IN `+openTaskStates, id); err != nil {
			return err
		}
		var err error
		t, err = taskBy(ctx, tx, `id = ?`, id)
		return err
	})
	if err != nil {
		return agentcore.Task{}, fmt.Errorf("detach task %s: %w", id, err)
	}
	return t, nil
}

// StartTask stores a task with its child's first queue item and its status
// line; see gateway.TaskStore.
func (db *DB) StartTask(ctx context.Context, t agentcore.Task, first gateway.Item, status gateway.Outbound) (agentcore.Task, error) {
	if t.ID == "" || t.ConversationID == "" || t.ParentConversationID == "" {
		return agentcore.Task{}, fmt.Errorf("start task: id (%q), conversation (%q) and parent conversation (%q) are required", t.ID, t.ConversationID, t.ParentConversationID)
	}
	if first.ConversationID != t.ConversationID || first.Kind == "" {
		return agentcore.Task{}, fmt.Errorf("start task %s: the first item must be of the child conversation %s", t.ID, t.ConversationID)
	}
	spec, err := json.Marshal(t.Spec)
	if err != nil {
		return agentcore.Task{}, fmt.Errorf("start task %s: spec: %w", t.ID, err)
	}
	if t.Status == "" {
		t.Status = agentcore.TaskQueued
	}
	if t.Created.IsZero() {
		t.Created = now()
	}
	err = db.write(ctx, "StartTask", func(tx *sql.Tx) error {
		tnow := now()
		t.StatusPost = 0
		if status.Kind != "" {
			ids, err := db.insertOutbound(ctx, tx, []gateway.Outbound{status}, tnow)
			if err != nil {
				return err
			}
			t.StatusPost = ids[0]
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO tasks (id, agent_id, parent_conversation_id, parent_location,
			parent_tool_call_id, conversation_id, type, description, prompt, spec, fork, background, depth,
			requester, status, created, status_post)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.AgentID, t.ParentConversationID, t.ParentLocation, t.ParentToolCallID, t.ConversationID,
			t.Type, t.Description, t.Prompt, string(spec), btoi(t.Fork), btoi(t.Background), t.Depth,
			t.Requester, string(t.Status), nanos(t.Created), t.StatusPost)
		if isForeignKey(err) {
			return fmt.Errorf("a conversation of the task does not exist: %w", ErrNotFound)
		}
		if err != nil {
			return err
		}
		if err := db.step("task"); err != nil {
			return err
		}
		_, err = db.insertItem(ctx, tx, first, tnow)
		return err
	})
	if err != nil {
		return agentcore.Task{}, fmt.Errorf("start task %s: %w", t.ID, err)
	}
	return t, nil
}

// AdmitTask gives a queued task one of its agent's limit slots; see
// gateway.TaskStore.
func (db *DB) AdmitTask(ctx context.Context, id string, limit int) (agentcore.Task, bool, error) {
	var t agentcore.Task
	var runs bool
	err := db.write(ctx, "AdmitTask", func(tx *sql.Tx) error {
		var err error
		if t, err = taskBy(ctx, tx, `id = ?`, id); err != nil {
			return err
		}
		if t.Status != agentcore.TaskQueued {
			runs = true
			return nil
		}
		var open int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM tasks WHERE agent_id = ? AND status = 'running'`,
			t.AgentID).Scan(&open); err != nil {
			return err
		}
		if open >= limit {
			runs = false
			return nil
		}
		t.Status, t.Started, runs = agentcore.TaskRunning, now(), true
		_, err = tx.ExecContext(ctx, `UPDATE tasks SET status = 'running', started = ? WHERE id = ?`, nanos(t.Started), id)
		return err
	})
	if err != nil {
		return agentcore.Task{}, false, fmt.Errorf("admit task %s: %w", id, err)
	}
	return t, runs, nil
}

// SetTaskStatus moves a task between running and waiting.
func (db *DB) SetTaskStatus(ctx context.Context, id string, s agentcore.TaskStatus) error {
	if s != agentcore.TaskRunning && s != agentcore.TaskWaiting {
		return fmt.Errorf("set status of task %s: %q is not running or waiting", id, s)
	}
	err := db.write(ctx, "SetTaskStatus", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE tasks SET status = ? WHERE id = ? AND status IN ('running', 'waiting')`, string(s), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("set status of task %s: %w", id, err)
	}
	return nil
}

// FinishTask ends a task in the transaction that completes its child's
// last item; see gateway.TaskStore.
func (db *DB) FinishTask(ctx context.Context, itemID int64, end agentcore.Task, notify, resume gateway.Item, out []gateway.Outbound) (bool, error) {
	if !end.Status.Final() {
		return false, fmt.Errorf("finish task %s: %q is not a final status", end.ID, end.Status)
	}
	if err := checkOutbound(out); err != nil {
		return false, fmt.Errorf("finish task %s: %w", end.ID, err)
	}
	if end.Ended.IsZero() {
		end.Ended = now()
	}
	var finished bool
	err := db.write(ctx, "FinishTask", func(tx *sql.Tx) error {
		finished = false
		t := now()
		if itemID != 0 {
			if err := db.completeItem(ctx, tx, itemID, t); err != nil {
				return err
			}
		}
		cur, err := taskBy(ctx, tx, `id = ?`, end.ID)
		if err != nil {
			return err
		}
		if cur.Status.Final() {
			return nil // stopped meanwhile: its end is written already
		}
		res, err := tx.ExecContext(ctx, `UPDATE tasks SET status = ?, report = ?, error = ?, report_file = ?, ended = ?,
			input_tokens = u.i, output_tokens = u.o, cached_tokens = u.c
			FROM (SELECT COALESCE(SUM(input_tokens), 0) AS i, COALESCE(SUM(output_tokens), 0) AS o,
				COALESCE(SUM(cached_tokens), 0) AS c FROM runs WHERE conversation_id = ?) AS u
			WHERE id = ? AND status IN `+openTaskStates,
			string(end.Status), end.Report, end.Error, end.ReportFile, nanos(end.Ended), cur.ConversationID, end.ID)
		if err != nil {
			return err
		}
		if err := mustAffect(res); err != nil {
			return err
		}
		if err := db.step("ended"); err != nil {
			return err
		}
		parent := resume
		if cur.Background {
			parent = notify
		}
		if parent.Kind != "" {
			parent.ConversationID, parent.AgentID = cur.ParentConversationID, cur.AgentID
			if parent.Location == "" {
				parent.Location = cur.ParentLocation
			}
			if _, err := db.insertItem(ctx, tx, parent, t); err != nil {
				return fmt.Errorf("queue the parent's input: %w", err)
			}
		}
		if err := db.step("parent"); err != nil {
			return err
		}
		if _, err := db.insertOutbound(ctx, tx, out, t); err != nil {
			return err
		}
		finished = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("finish task %s: %w", end.ID, err)
	}
	return finished, nil
}

// QueuedTasks returns the child conversations of an agent's queued tasks,
// oldest first.
func (db *DB) QueuedTasks(ctx context.Context, agentID string) ([]string, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT conversation_id FROM tasks WHERE agent_id = ? AND status = 'queued'
		ORDER BY created, rowid`, agentID)
	if err != nil {
		return nil, fmt.Errorf("queued tasks of agent %s: %w", agentID, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, fmt.Errorf("queued tasks of agent %s: %w", agentID, err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
