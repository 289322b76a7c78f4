package sim

import (
	"encoding/json"
	"strconv"
)

// Tools and structured output over the Responses and Messages APIs: the
// request's tools, tool_choice and output format in the API's own shape
// are read onto chat's (constraintFields), so that the same plan
// (planConstrained) and the same invalid rates hold under every API; the
// answer goes out as the API's call events (apiStream) or its whole
// answer's call item or block (apiWhole).

// apiFormat is the Responses API's text.format and the Messages API's
// output_config.format: {type: "json_schema", schema} (Responses also
// {type: "json_object"}).
type apiFormat struct {
	Format *struct {
		Type   string          `json:"type"`
		Schema json.RawMessage `json:"schema"`
	} `json:"format"`
}

// apiConstraints reads an API request's tools, tool_choice and format
// onto chat's fields: a Responses tool {type: "function", name,
// parameters} or a Messages tool {name, input_schema} becomes {type:
// "function", function: {name, parameters}}; a choice naming a tool
// ({type: "function"|"tool", name}) forces it, Messages' {type: "none"}
// is "none" and its auto and any are left to the first tool; text.format
// and output_config.format are response_format. What does not read as
// the API's shape is left for planConstrained to refuse.
func apiConstraints(req *genRequest, endpoint string) {
	var tools []map[string]json.RawMessage
	if len(req.Tools) > 0 && json.Unmarshal(req.Tools, &tools) == nil {
		out := make([]map[string]any, 0, len(tools))
		for _, t := range tools {
			if _, chat := t["function"]; chat {
				return // chat's shape already
			}
			params := t["parameters"]
			if endpoint == epMessages {
				params = t["input_schema"]
			}
			fn := map[string]any{"name": t["name"]}
			if len(params) > 0 {
				fn["parameters"] = params
			}
			out = append(out, map[string]any{"type": "function", "function": fn})
		}
		req.Tools, _ = json.Marshal(out)
	}
	var choice struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(req.ToolChoice, &choice) == nil {
		switch {
		case choice.Name != "":
			req.ToolChoice = json.RawMessage(`{"type":"function","function":{"name":` + strconv.Quote(choice.Name) + `}}`)
		case choice.Type == "none":
			req.ToolChoice = json.RawMessage(`"none"`)
		case choice.Type != "":
			req.ToolChoice = nil
		}
	}
	f := req.Text
	if endpoint == epMessages {
		f = req.OutputConfig
	}
	if f == nil || f.Format == nil || req.ResponseFormat != nil {
		return
	}
	switch f.Format.Type {
	case "json_schema":
		rf := map[string]any{"type": "json_schema", "json_schema": map[string]any{"schema": f.Format.Schema}}
		b, _ := json.Marshal(rf)
		_ = json.Unmarshal(b, &req.ResponseFormat)
	case "json_object":
		_ = json.Unmarshal([]byte(`{"type":"json_object"}`), &req.ResponseFormat)
	}
}

// Stop reasons of a call: Messages' tool_use.
const messagesToolStop = "tool_use"

// callOpen appends the events that open a tool call: a Messages
// tool_use block with an empty input (the input follows as
// input_json_delta), a Responses function_call item with empty arguments
// (they follow as response.function_call_arguments.delta).
func (a *apiStream) callOpen(b []byte, p genPlan) []byte {
	idx := strconv.Itoa(a.block)
	name := strconv.Quote(p.constrained.tool)
	callID := "call_" + strconv.FormatUint(p.promptHash&0xffffffff, 16)
	if a.ep == epMessages {
		return a.event(b, "content_block_start", `"index":`+idx+`,"content_block":{"type":"tool_use","id":"toolu_`+a.id+`","name":`+name+`,"input":{}}`)
	}
	return a.event(b, "response.output_item.added", `"output_index":`+idx+`,"item":{"id":"fc_`+a.id+`","type":"function_call","status":"in_progress","call_id":"`+callID+`","name":`+name+`,"arguments":""}`)
}

// callDelta appends the event carrying answer tokens [from, to) of a
// call's arguments.
func (a *apiStream) callDelta(b []byte, c *planned, from, to int) []byte {
	idx := strconv.Itoa(a.block)
	piece := string(c.appendPiece(nil, from, to))
	a.callSent = to
	if a.ep == epMessages {
		return a.event(b, "content_block_delta", `"index":`+idx+`,"delta":{"type":"input_json_delta","partial_json":"`+piece+`"}`)
	}
	return a.event(b, "response.function_call_arguments.delta", `"item_id":"fc_`+a.id+`","output_index":`+idx+`,"delta":"`+piece+`"`)
}

// callClose appends the events that close a call: Messages'
// content_block_stop; Responses' arguments done and the item done, each
// with the arguments sent.
func (a *apiStream) callClose(b []byte) []byte {
	idx := strconv.Itoa(a.block)
	if a.ep == epMessages {
		return a.event(b, "content_block_stop", `"index":`+idx)
	}
	args := strconv.Quote(a.call.sent(a.callSent))
	b = a.event(b, "response.function_call_arguments.done", `"item_id":"fc_`+a.id+`","output_index":`+idx+`,"arguments":`+args)
	return a.event(b, "response.output_item.done", `"output_index":`+idx+`,"item":{"id":"fc_`+a.id+`","type":"function_call","status":"completed","name":`+strconv.Quote(a.call.tool)+`,"arguments":`+args+`}`)
}

// wholeCall is a whole answer's call: a Messages tool_use block (its
// input the arguments as JSON; arguments cut short, which no JSON object
// holds, go as a string) or a Responses function_call item.
func wholeCall(ep, id string, c *planned, n int) map[string]any {
	args := c.sent(n)
	if ep == epMessages {
		var input any = args
		if json.Valid([]byte(args)) {
			input = json.RawMessage(args)
		}
		return map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": c.tool, "input": input}
	}
	return map[string]any{"id": "fc_" + id, "type": "function_call", "status": "completed", "call_id": "call_" + id,
		"name": c.tool, "arguments": args}
}
