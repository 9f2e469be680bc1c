"""One-shot code runs against runs in a live sandbox, through the gateway:
N rounds of print(2) in a live sandbox (the baseline), then a one-shot
POST /v1/code print(1) (create or claim, run, delete), each timed after a
PACE_MS pause. What is timed is the client's: until its answer is in.
Prints one JSON line: p50 / p95 of each, and the ratio of the p50s.
python3 bench/oneshot_client.py PORT N TOOL PACE_MS"""
import json
import sys
import time

from sgclient import Gateway, pct

port, n, tool, pace = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
call = Gateway(port).call

live = call("POST", "/v1/sandboxes", {"tool": tool})["id"]
call("POST", "/v1/sandboxes/%s/code" % live, {"code": "print(0)"})
warm, oneshot = [], []
for _ in range(n):
    time.sleep(pace / 1000)
    t0 = time.perf_counter()
    call("POST", "/v1/sandboxes/%s/code" % live, {"code": "print(2)"})
    warm.append((time.perf_counter() - t0) * 1000)
    time.sleep(pace / 1000)
    t0 = time.perf_counter()
    out = call("POST", "/v1/code", {"tool": tool, "code": "print(1)"})
    oneshot.append((time.perf_counter() - t0) * 1000)
    assert out["stdout"] == "1\n", out
call("DELETE", "/v1/sandboxes/%s" % live)
print(json.dumps({"tool": tool, "runs": n,
                  "oneshot": {"p50": pct(oneshot, 50), "p95": pct(oneshot, 95)},
                  "warm": {"p50": pct(warm, 50), "p95": pct(warm, 95)},
                  "ratio": pct(oneshot, 50) / pct(warm, 50)}))
