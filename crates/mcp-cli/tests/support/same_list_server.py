# A stdio MCP server for cli_newuser.rs: one tool, always the same. It writes
# its pid to the file named by its argument before it reads anything, and on
# each SIGUSR1 says its tool list changed (notifications/tools/list_changed)
# although it lists the very same tool again. Anything else but ping is -32601.
import json, os, signal, sys, threading

lock = threading.Lock()

def send(message):
    with lock:
        print(json.dumps(message), flush=True)

# The signal is taken by a thread of its own (blocked everywhere, waited
# for there), so a notification never interrupts a reply being written.
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})

def on_usr1():
    while True:
        signal.sigwait({signal.SIGUSR1})
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})

threading.Thread(target=on_usr1, daemon=True).start()
with open(sys.argv[1], "w") as pid_file:
    pid_file.write(str(os.getpid()))

for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:
        continue
    method = msg["method"]
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"],
                  "capabilities": {"tools": {"listChanged": True}},
                  "serverInfo": {"name": "same-list", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    elif method == "ping":
        result = {}
    else:
        send({"jsonrpc": "2.0", "id": msg["id"],
              "error": {"code": -32601, "message": "no " + method}})
        continue
    send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
