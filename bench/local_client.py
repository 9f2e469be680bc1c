"""Cold and warm run latency of local sandboxes through the gateway.
python3 bench/local_client.py PORT N [TOOL]"""
import http.client
import json
import statistics
import sys
import time

port, n = int(sys.argv[1]), int(sys.argv[2])
tool = sys.argv[3] if len(sys.argv) > 3 else "local"
conn = http.client.HTTPConnection("127.0.0.1", port)


def call(method, path, body=None):
    conn.request(method, path, body=json.dumps(body) if body is not None else None,
                 headers={"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    if r.status >= 300:
        raise SystemExit("%s %s -> %d %s" % (method, path, r.status, data[:200]))
    return json.loads(data)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


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
