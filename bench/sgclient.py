"""What the bench's Python clients share: calls on one kept connection to
the gateway (a failed one ends the bench with what was answered), and
percentiles."""
import http.client
import json
import time


class Gateway:
    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port)

    def call(self, method, path, body=None):
        self.conn.request(method, path, body=json.dumps(body) if body is not None else None,
                          headers={"Content-Type": "application/json"})
        r = self.conn.getresponse()
        data = r.read()
        if r.status >= 300:
            raise SystemExit("%s %s -> %d %s" % (method, path, r.status, data[:200]))
        return json.loads(data) if data else None


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def p50_p95(xs):
    return {"p50": pct(xs, 50), "p95": pct(xs, 95)}


class LiveSandbox:
    """The baseline of the first-run benches: a live sandbox of tool, and
    one run in it timed after pace_ms (every timed step comes after the
    same pause: an idle machine wakes up slower than a busy one, so a run
    right after another would flatter the baseline)."""

    def __init__(self, call, tool, pace_ms):
        self.call, self.pace = call, pace_ms
        self.id = call("POST", "/v1/sandboxes", {"tool": tool})["id"]
        call("POST", "/v1/sandboxes/%s/code" % self.id, {"code": "print(0)"})

    def run_ms(self):
        time.sleep(self.pace / 1000)
        t0 = time.perf_counter()
        self.call("POST", "/v1/sandboxes/%s/code" % self.id, {"code": "print(2)"})
        return (time.perf_counter() - t0) * 1000

    def close(self):
        self.call("DELETE", "/v1/sandboxes/%s" % self.id)
