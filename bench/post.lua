-- wrk script: POST the body in $BODY_FILE with a Bearer key.
local f = assert(io.open(os.getenv("BODY_FILE"), "r"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer bench-key"
