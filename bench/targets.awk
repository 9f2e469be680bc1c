# The issue's targets, from the floor part's raw rows
# ("NAME... C REQ/S P50_US P99_US ERR"), as a Markdown table.
{
	name = $1
	for (i = 2; i <= NF - 5; i++)
		name = name " " $i
	c = $(NF - 4)
	rps[name, c] = $(NF - 3)
	p50[name, c] = $(NF - 2)
}
function row(what, got, want, ok) {
	printf "| %s | %s | %s | %s |\n", what, got, want, ok ? "met" : "**missed**"
}
END {
	fl = "bare libfcgi responder (floor)"; hz = "sandgate GET /healthz"
	st = "static file"
	print "| target | measured | wanted | |"
	print "| --- | --- | --- | --- |"
	r = p50[hz, 1] / p50[fl, 1]
	row("/healthz p50 at c=1 ÷ floor's", sprintf("%.2f× (%d / %d µs)", r, p50[hz, 1], p50[fl, 1]), "≤ 1.3×", r <= 1.3)
	for (c = 16; c <= 64; c *= 4) {
		r = rps[hz, c] / rps[fl, c]
		row("/healthz req/s at c=" c " ÷ floor's", sprintf("%.0f%%", 100 * r), "≥ 90%", r >= 0.9)
	}
	for (k = 0; k < 2; k++) {
		kind = k ? "stream" : "JSON"
		pt = "sandgate passthrough, chat " kind; dr = "upstream direct, chat " kind
		hop = p50[fl, 1] - p50[st, 1]
		over = p50[pt, 1] - p50[dr, 1] - hop
		row("passthrough " kind " p50 at c=1 − (direct + floor hop)",
		    sprintf("%+d µs (%d − %d − %d)", over, p50[pt, 1], p50[dr, 1], hop), "≤ +100 µs", over <= 100)
		pf = "libfcgi + libcurl proxy (passthrough floor), chat " kind
		over = p50[pt, 1] - p50[pf, 1]
		row("passthrough " kind " p50 at c=1 − the passthrough floor's",
		    sprintf("%+d µs (%d − %d)", over, p50[pt, 1], p50[pf, 1]), "≤ +60 µs", over <= 60)
		for (c = 16; c <= 64; c *= 4) {
			r = rps[pt, c] / rps[hz, c]
			row("passthrough " kind " req/s at c=" c " ÷ /healthz's", sprintf("%.0f%%", 100 * r), "≥ 75%", r >= 0.75)
			r = rps[pt, c] / rps[pf, c]
			row("passthrough " kind " req/s at c=" c " ÷ the passthrough floor's", sprintf("%.0f%%", 100 * r), "≥ 90%", r >= 0.9)
		}
	}
}
