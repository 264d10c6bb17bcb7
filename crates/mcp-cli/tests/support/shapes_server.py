# A stdio MCP server for cli_newuser.rs: one tool whose schema has arrays,
# unions, constants and nested objects; it answers nothing else.
import json, sys
schema = {"type": "object", "required": ["entities"], "properties": {
  "entities": {"type": "array", "items": {"type": "object",
    "properties": {"name": {"type": "string"}, "entityType": {"type": "string"}}}},
  "tags": {"type": "array", "items": {"type": "string"}},
  "start_timestamp": {"anyOf": [{"type": "string"}, {"type": "null"}]},
  "mode": {"const": "fast"},
  "level": {"type": ["integer", "null"]},
  "color": {"enum": ["red", "green", "blue", "cyan", "magenta", "yellow", "black", "white"]}}}
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "shapes", "version": "1"}}
    elif msg["method"] == "tools/list":
        result = {"tools": [{"name": "store", "inputSchema": schema}]}
    else:
        print(json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                          "error": {"code": -32601, "message": "no"}}), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
