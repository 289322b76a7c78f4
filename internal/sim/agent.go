package sim

import (
	"encoding/json"
	"hash/fnv"
)

// An agent session, as the simulator serves it (Tools.AgentSteps > 0): a
// chat request that offers tools is one step of a session, and the
// session's first user message decides, deterministically, how many steps
// it has (AgentSteps). Step k (1 + the `role: "tool"` results the request
// carries) ends in one tool call while k is below that number, and in a
// final answer (text, finish "stop") at it or past it. So a client's
// steps per session, the tool calls it must play and the step each
// request is are known from the prompts alone; RequestRecord.AgentStep
// and AgentSteps say what the simulator planned for each request.

// AgentSteps is how many steps (model calls, the last the final answer)
// the session whose first user message is firstUser plans when sessions
// have at most maxSteps: 1 + FNV-1a(firstUser) mod maxSteps.
func AgentSteps(firstUser string, maxSteps int) int {
	if maxSteps <= 1 {
		return 1
	}
	h := fnv.New64a()
	h.Write([]byte(firstUser))
	return 1 + int(h.Sum64()%uint64(maxSteps))
}

// agentStep reads a chat request's messages as a step of an agent
// session: the step (1 + the tool results it carries) and the steps its
// session plans (from its first user message). ok is false when the
// messages do not read (the request's own parse reports why).
func agentStep(raws []json.RawMessage, maxSteps int) (step, steps int, ok bool) {
	first, found := "", false
	step = 1
	for _, raw := range raws {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &m) != nil {
			return 0, 0, false
		}
		switch {
		case m.Role == "tool":
			step++
		case m.Role == "user" && !found:
			found = true
			if json.Unmarshal(m.Content, &first) != nil {
				first = string(m.Content) // content parts: their JSON text
			}
		}
	}
	return step, AgentSteps(first, maxSteps), true
}

// agentPlan decides whether an agent session's step ends in the tool call
// c planned (a step before the session's last) or in a final answer (nil:
// words), and records the step. c is a tool call (c.tool != "").
func (s *Server) agentPlan(messages []json.RawMessage, c *planned, rec *record) *planned {
	step, steps, ok := agentStep(messages, s.cfg.Tools.AgentSteps)
	if !ok {
		return c
	}
	rec.update(func(r *RequestRecord) { r.AgentStep, r.AgentSteps = step, steps })
	if step >= steps {
		return nil
	}
	return c
}
