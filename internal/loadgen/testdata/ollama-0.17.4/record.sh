#!/usr/bin/env bash
# Records the transcripts in this folder from a running Ollama v0.17.4 that
# serves the three models of Modelfile.* (see README.md):
#
#   OLLAMA_HOST=127.0.0.1:11517 OLLAMA_MODELS=$(mktemp -d) ollama serve &
#   for m in plain think tools; do
#     sed "s|@GGUF@|$PWD/testdata/models/stories260K.gguf|" \
#       internal/loadgen/testdata/ollama-0.17.4/Modelfile.$m > /tmp/Modelfile.$m
#     OLLAMA_HOST=127.0.0.1:11517 ollama create stories-$m -f /tmp/Modelfile.$m
#   done
#   bash internal/loadgen/testdata/ollama-0.17.4/record.sh 127.0.0.1:11517
#
# Each file: the request (method, path, body) after "# >", the status line
# and Content-Type after "# <", then the response body byte for byte.
set -euo pipefail
host="${1:-127.0.0.1:11517}"
cd "$(dirname "$0")"

rec() { # rec NAME PATH BODY
	local name="$1" path="$2" body="$3" hdr
	hdr="$(mktemp)"
	{
		echo "# > POST $path"
		echo "# > $body"
		curl -sN -D "$hdr" -o "$hdr.body" "http://$host$path" -H 'Content-Type: application/json' -d "$body"
		echo "# < $(head -n1 "$hdr" | tr -d '\r')"
		echo "# < $(grep -i '^content-type:' "$hdr" | tr -d '\r')"
		cat "$hdr.body"
	} >"$name.txt"
	rm -f "$hdr" "$hdr.body"
}

msgs='"messages":[{"role":"user","content":"Once upon a time"}]'
opts='"temperature":0,"seed":1'
usage='"stream_options":{"include_usage":true}'

# A model that does not think (no PARSER, the default template).
rec plain-chat-stream /v1/chat/completions "{\"model\":\"stories-plain\",$msgs,$opts,\"max_tokens\":8,\"stream\":true,$usage}"
rec plain-chat /v1/chat/completions "{\"model\":\"stories-plain\",$msgs,$opts,\"max_tokens\":8}"
rec plain-completions-stream /v1/completions "{\"model\":\"stories-plain\",\"prompt\":\"Once upon a time\",$opts,\"max_tokens\":8,\"stream\":true,$usage}"
rec plain-reasoning-effort-none /v1/chat/completions "{\"model\":\"stories-plain\",$msgs,$opts,\"max_tokens\":4,\"reasoning_effort\":\"none\"}"
rec plain-reasoning-effort-low /v1/chat/completions "{\"model\":\"stories-plain\",$msgs,$opts,\"max_tokens\":4,\"reasoning_effort\":\"low\"}"
rec plain-api-chat-think-true /api/chat "{\"model\":\"stories-plain\",$msgs,\"options\":{\"temperature\":0,\"seed\":1,\"num_predict\":4},\"think\":true}"
rec plain-tools-refused /v1/chat/completions "{\"model\":\"stories-plain\",$msgs,$opts,\"max_tokens\":4,\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}}]}"

# A thinking model: PARSER qwen3-thinking (thinks by default; stories260K
# never writes </think>, so every output token is reasoning).
rec think-chat-stream /v1/chat/completions "{\"model\":\"stories-think\",$msgs,$opts,\"max_tokens\":8,\"stream\":true,$usage}"
rec think-chat /v1/chat/completions "{\"model\":\"stories-think\",$msgs,$opts,\"max_tokens\":8}"
rec think-chat-1token /v1/chat/completions "{\"model\":\"stories-think\",$msgs,$opts,\"max_tokens\":1}"
rec think-completions /v1/completions "{\"model\":\"stories-think\",\"prompt\":\"Once upon a time\",$opts,\"max_tokens\":4}"
rec think-completions-stream /v1/completions "{\"model\":\"stories-think\",\"prompt\":\"Once upon a time\",$opts,\"max_tokens\":4,\"stream\":true,$usage}"
rec think-reasoning-effort-none-stream /v1/chat/completions "{\"model\":\"stories-think\",$msgs,$opts,\"max_tokens\":6,\"reasoning_effort\":\"none\",\"stream\":true,$usage}"
rec think-reasoning-effort-low /v1/chat/completions "{\"model\":\"stories-think\",$msgs,$opts,\"max_tokens\":4,\"reasoning_effort\":\"low\"}"
rec think-reasoning-effort-low-stream /v1/chat/completions "{\"model\":\"stories-think\",$msgs,$opts,\"max_tokens\":4,\"reasoning_effort\":\"low\",\"stream\":true}"
rec think-reasoning-effort-bogus /v1/chat/completions "{\"model\":\"stories-think\",$msgs,$opts,\"max_tokens\":4,\"reasoning_effort\":\"max\"}"
rec think-reasoning-object-none /v1/chat/completions "{\"model\":\"stories-think\",$msgs,$opts,\"max_tokens\":4,\"reasoning\":{\"effort\":\"none\"}}"
rec think-api-chat-stream /api/chat "{\"model\":\"stories-think\",$msgs,\"options\":{\"temperature\":0,\"seed\":1,\"num_predict\":4}}"
rec think-api-chat-think-false /api/chat "{\"model\":\"stories-think\",$msgs,\"options\":{\"temperature\":0,\"seed\":1,\"num_predict\":4},\"think\":false,\"stream\":false}"
rec think-api-generate /api/generate "{\"model\":\"stories-think\",\"prompt\":\"Once upon a time\",\"options\":{\"temperature\":0,\"seed\":1,\"num_predict\":4},\"stream\":false}"

# Tool calls: a template with .Tools and .ToolCalls (no PARSER: Ollama's
# template-derived parser, tag "{"), the call forced by a json_schema
# response_format whose shape is the call. tool_choice is not a field of
# Ollama's request: sent, it is ignored.
tool='{"type":"function","function":{"name":"get_weather","description":"Weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Rome"]}},"required":["city"]}}}'
callschema='{"type":"json_schema","json_schema":{"name":"call","strict":true,"schema":{"type":"object","properties":{"name":{"type":"string","enum":["get_weather"]},"arguments":{"type":"object","properties":{"city":{"type":"string","enum":["Paris","Rome"]}},"required":["city"]}},"required":["name","arguments"]}}}'
rec tools-forced-stream /v1/chat/completions "{\"model\":\"stories-tools\",$msgs,$opts,\"max_tokens\":64,\"tools\":[$tool],\"tool_choice\":\"required\",\"response_format\":$callschema,\"stream\":true,$usage}"
rec tools-forced /v1/chat/completions "{\"model\":\"stories-tools\",$msgs,$opts,\"max_tokens\":64,\"tools\":[$tool],\"tool_choice\":\"required\",\"response_format\":$callschema}"
rec tools-unforced-stream /v1/chat/completions "{\"model\":\"stories-tools\",$msgs,$opts,\"max_tokens\":8,\"tools\":[$tool],\"tool_choice\":\"auto\",\"stream\":true,$usage}"
rec tools-api-chat-forced /api/chat "{\"model\":\"stories-tools\",$msgs,\"options\":{\"temperature\":0,\"seed\":1,\"num_predict\":64},\"tools\":[$tool],\"format\":$(echo "$callschema" | sed 's/^.*"schema":\(.*\)}}$/\1/')}"

# Structured output on the plain model.
schema='{"type":"json_schema","json_schema":{"name":"story","strict":true,"schema":{"type":"object","properties":{"hero":{"type":"string","enum":["Lily","Tom","Sue"]},"age":{"type":"integer","minimum":1,"maximum":9}},"required":["hero","age"]}}}'
rec json-schema-stream /v1/chat/completions "{\"model\":\"stories-plain\",$msgs,$opts,\"max_tokens\":64,\"response_format\":$schema,\"stream\":true,$usage}"
rec json-schema /v1/chat/completions "{\"model\":\"stories-plain\",$msgs,$opts,\"max_tokens\":64,\"response_format\":$schema}"
rec json-schema-cut /v1/chat/completions "{\"model\":\"stories-plain\",$msgs,$opts,\"max_tokens\":5,\"response_format\":$schema,\"stream\":true,$usage}"
rec json-object /v1/chat/completions "{\"model\":\"stories-plain\",$msgs,$opts,\"max_tokens\":24,\"response_format\":{\"type\":\"json_object\"}}"
rec json-schema-completions /v1/completions "{\"model\":\"stories-plain\",\"prompt\":\"Once upon a time\",$opts,\"max_tokens\":64,\"response_format\":$schema}"
rec think-json-schema /v1/chat/completions "{\"model\":\"stories-think\",$msgs,$opts,\"max_tokens\":16,\"response_format\":$schema}"
