"""One-shot code runs against runs in a live sandbox, through the gateway:
N rounds of print(2) in a live sandbox (the baseline), then a one-shot
POST /v1/code print(1) (create or claim, run, delete), each timed after a
PACE_MS pause. What is timed is the client's: until its answer is in.
Prints one JSON line: p50 / p95 of each, and the ratio of the p50s.
python3 bench/oneshot_client.py PORT N TOOL PACE_MS"""
import json
import sys
import time

from sgclient import Gateway, LiveSandbox, p50_p95, pct

port, n, tool, pace = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
call = Gateway(port).call

live = LiveSandbox(call, tool, pace)
warm, oneshot = [], []
for _ in range(n):
    warm.append(live.run_ms())
    time.sleep(pace / 1000)
    t0 = time.perf_counter()
    out = call("POST", "/v1/code", {"tool": tool, "code": "print(1)"})
    oneshot.append((time.perf_counter() - t0) * 1000)
    assert out["stdout"] == "1\n", out
live.close()
print(json.dumps({"tool": tool, "runs": n, "oneshot": p50_p95(oneshot), "warm": p50_p95(warm),
                  "ratio": pct(oneshot, 50) / pct(warm, 50)}))
