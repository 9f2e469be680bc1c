"""What the bench's Python clients share: calls on one kept connection to
the gateway (a failed one ends the bench with what was answered), and
percentiles."""
import http.client
import json


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
