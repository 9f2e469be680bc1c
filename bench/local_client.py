"""Cold and warm run latency of local sandboxes through the gateway.
python3 bench/local_client.py PORT N [TOOL]"""
import json
import statistics
import sys
import time

from sgclient import Gateway, pct

port, n = int(sys.argv[1]), int(sys.argv[2])
tool = sys.argv[3] if len(sys.argv) > 3 else "local"
call = Gateway(port).call


cold = []
for _ in range(n):
    t0 = time.perf_counter()
    sid = call("POST", "/v1/sandboxes", {"tool": tool})["id"]
    out = call("POST", "/v1/sandboxes/%s/code" % sid, {"code": "print(1)"})
    cold.append((time.perf_counter() - t0) * 1000)
    assert out["stdout"] == "1\n", out
    call("DELETE", "/v1/sandboxes/%s" % sid)

sid = call("POST", "/v1/sandboxes", {"tool": tool})["id"]
call("POST", "/v1/sandboxes/%s/code" % sid, {"code": "x = 0"})
warm = []
for _ in range(n):
    t0 = time.perf_counter()
    out = call("POST", "/v1/sandboxes/%s/code" % sid, {"code": "x += 1\nprint(x)"})
    warm.append((time.perf_counter() - t0) * 1000)
call("DELETE", "/v1/sandboxes/%s" % sid)
print(json.dumps({"tool": tool, "runs": n,
                  "cold_ms": {"p50": round(pct(cold, 50), 1), "p95": round(pct(cold, 95), 1),
                              "mean": round(statistics.mean(cold), 1)},
                  "warm_ms": {"p50": round(pct(warm, 50), 2), "p95": round(pct(warm, 95), 2),
                              "mean": round(statistics.mean(warm), 2)}}))
