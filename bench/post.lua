-- wrk script: POST the body in $BODY_FILE with a Bearer key ($KEY, else
-- bench-key), and the header in $HEADER ("Name: value") when set.
local f = assert(io.open(os.getenv("BODY_FILE"), "r"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("KEY") or "bench-key")
local h = os.getenv("HEADER")
if h then
	local k, v = h:match("^([^:]+):%s*(.*)$")
	wrk.headers[k] = v
end
