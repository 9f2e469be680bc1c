"""A sandbox's first code run with and without the warm pool, through the
gateway: N rounds of a run in a live sandbox (a warm run, the baseline),
then POST /v1/sandboxes and print(1) in it (the first run), then DELETE;
each timed step after a PACE_MS pause, which also lets the pool refill (a
round that finds it empty pays a cold create, as a request would: counted
in the misses).
python3 bench/pool_client.py PORT N TOOL PACE_MS"""
import json
import sys
import time

from sgclient import Gateway, LiveSandbox, p50_p95

port, n, tool, pace = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
call = Gateway(port).call


# The warm run's sandbox: a session's, live throughout.
live = LiveSandbox(call, tool, pace)
create, first, total, warm = [], [], [], []
for _ in range(n):
    warm.append(live.run_ms())
    time.sleep(pace / 1000)
    t0 = time.perf_counter()
    sid = call("POST", "/v1/sandboxes", {"tool": tool})["id"]
    t1 = time.perf_counter()
    out = call("POST", "/v1/sandboxes/%s/code" % sid, {"code": "print(1)"})
    t2 = time.perf_counter()
    assert out["stdout"] == "1\n", out
    create.append((t1 - t0) * 1000)
    first.append((t2 - t1) * 1000)
    total.append((t2 - t0) * 1000)
    call("DELETE", "/v1/sandboxes/%s" % sid)
live.close()
print(json.dumps({"tool": tool, "runs": n, "create": p50_p95(create), "first": p50_p95(first),
                  "total": p50_p95(total), "warm": p50_p95(warm)}))
