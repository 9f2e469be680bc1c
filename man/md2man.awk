# sandgate.conf(5) from docs/configuration.md, so that the page and the
# reference are one text:
#   LC_ALL=C awk -f man/md2man.awk docs/configuration.md man/sandgate.conf.5.in
# prints the template with its line "@BODY@" replaced by the document
# from its first "## " heading on, as man(7). Only the Markdown the
# reference uses is understood: "##"/"###" headings, paragraphs, "- "
# lists (continued by indented lines), tables, `code`, **bold**,
# [text](url) and fenced code; anything else (or a character with no roff
# name below) stops it with an error, never a page that renders wrong.
#
# A "## `group`" or "## Top level" heading is a group of settings (the
# rule tests/integration/config-doc.test.mjs reads the document by): they
# go under one ".SH SETTINGS" as ".SS group", their "###" headings as
# ".SS group: heading". Other "##" headings are ".SH" sections. A table
# row is a ".TP" entry: the first cell is the tag, on a line of its own;
# for a settings table (| key | type | default | meaning |) the body is
# "Type: ...", "Default: ..." and the meaning, for any other the cells
# after the first.

# at: the document's line at fault (a paragraph's first while it is written).
function fail(msg) {
	printf "md2man.awk: %s:%d: %s\n", ARGV[1], at, msg > "/dev/stderr"
	failed = 1
	exit 1
}

function trim(s) {
	sub(/^[ \t]+/, "", s)
	sub(/[ \t]+$/, "", s)
	return s
}

# Characters outside ASCII by their roff names; any other is an error.
function chars(s) {
	gsub(/–/, "\\(en", s)
	gsub(/—/, "\\(em", s)
	gsub(/≤/, "\\(<=", s)
	gsub(/≥/, "\\(>=", s)
	gsub(/→/, "\\(->", s)
	gsub(/×/, "\\(mu", s)
	gsub(/…/, "\\&.\\|.\\|.", s)
	if (match(s, /[\200-\377]/))
		fail("a character md2man.awk has no roff name for: " substr(s, RSTART, 3))
	return s
}

# Markdown inline text to roff text (not a macro argument).
function inline(s,    out, i, n, parts, t) {
	gsub(/\\/, "\\e", s)
	# Links: the text, then the address.
	while (match(s, /\[[^]]*\]\([^)]*\)/)) {
		t = substr(s, RSTART + 1, RLENGTH - 2)
		sub(/\]\(/, " <", t)
		s = substr(s, 1, RSTART - 1) t ">" substr(s, RSTART + RLENGTH)
	}
	# Code spans: bold, with minus signs.
	n = split(s, parts, "`")
	if (n % 2 == 0)
		fail("an odd number of ` in: " s)
	out = ""
	for (i = 1; i <= n; i++) {
		t = parts[i]
		if (i % 2 == 0) {
			gsub(/-/, "\\-", t)
			t = "\\fB" t "\\fR"
		} else {
			while (match(t, /\*\*[^*]+\*\*/))
				t = substr(t, 1, RSTART - 1) "\\fB" \
				    substr(t, RSTART + 2, RLENGTH - 4) "\\fR" \
				    substr(t, RSTART + RLENGTH)
			if (index(t, "*") || index(t, "_") == 1)
				fail("emphasis md2man.awk does not know: " t)
		}
		out = out t
	}
	return chars(out)
}

# A macro argument in double quotes: the heading's text, no code marks.
function arg(s) {
	gsub(/`/, "", s)
	gsub(/\\/, "\\e", s)
	gsub(/"/, "\\(dq", s)
	return "\"" chars(s) "\""
}

# Text filled into lines of at most 78 bytes; none starts with . or '.
function put(s,    n, w, i, line) {
	n = split(s, w, " ")
	line = ""
	for (i = 1; i <= n; i++) {
		if (line != "" && length(line) + 1 + length(w[i]) > 78) {
			emit(line)
			line = ""
		}
		line = line == "" ? w[i] : line " " w[i]
	}
	if (line != "")
		emit(line)
}

function emit(line) {
	if (line ~ /^[.']/)
		line = "\\&" line
	body = body line "\n"
}

function macro(m) {
	body = body m "\n"
}

# The paragraph or list item gathered so far.
function flush() {
	if (para == "")
		return
	if (item)
		macro(".IP \\(bu 2")
	else if (!fresh)
		macro(".PP")
	at = para_at
	put(inline(para))
	at = FNR
	para = ""
	item = 0
	fresh = 0
}

function cells(line, c,    n, i) {
	line = trim(line)
	sub(/^\|/, "", line)
	sub(/\|$/, "", line)
	n = split(line, c, "|")
	for (i = 1; i <= n; i++)
		c[i] = trim(c[i])
	return n
}

function row(line,    c, n, i, h) {
	n = cells(line, c)
	if (n != ncols)
		fail("a row of " n " cells in a table of " ncols)
	macro(".TP")
	emit(inline(c[1]))
	macro(".br")
	for (i = 2; i <= n; i++) {
		if (i < n) {
			h = head[i]
			put(toupper(substr(h, 1, 1)) substr(h, 2) ": " inline(c[i]))
			macro(".br")
		} else
			put(inline(c[i]))
	}
	fresh = 0
}

function heading(level, text,    g) {
	flush()
	text = trim(text)
	if (level == 2) {
		g = text ~ /^`[^`]+`$/ || text == "Top level"
		if (g && !settings)
			macro(".SH SETTINGS")
		settings = g
		if (g) {
			group = text
			gsub(/`/, "", group)
			macro(".SS " arg(group))
		} else
			macro(".SH " arg(toupper(text)))
	} else if (settings)
		macro(".SS " arg(group ": " text))
	else
		macro(".SS " arg(text))
	fresh = 1
}

FILENAME == ARGV[1] {
	at = FNR
}

FILENAME == ARGV[1] && !started {
	if ($0 !~ /^## /)
		next
	started = 1
}

FILENAME == ARGV[1] && fence {
	if ($0 ~ /^ *```/) {
		macro(".fi")
		macro(".RE")
		fence = 0
		fresh = 0
	} else {
		verbatim = $0
		gsub(/\\/, "\\e", verbatim)
		gsub(/-/, "\\-", verbatim)
		emit(chars(verbatim))
	}
	next
}

FILENAME == ARGV[1] {
	if ($0 ~ /^ *```/) {
		flush()
		if (!fresh)
			macro(".PP")
		macro(".RS 4")
		macro(".nf")
		fence = 1
	} else if ($0 ~ /^## /)
		heading(2, substr($0, 4))
	else if ($0 ~ /^### /)
		heading(3, substr($0, 5))
	else if ($0 ~ /^#/)
		fail("a heading md2man.awk does not know")
	else if ($0 ~ /^\|/) {
		if (!table) {
			flush()
			ncols = cells($0, head)
			table = 1
		} else if ($0 ~ /^\|[ :|-]+$/)
			;
		else
			row($0)
	} else if (trim($0) == "") {
		flush()
		table = 0
	} else if (table)
		fail("a table must end with an empty line")
	else if ($0 ~ /^- /) {
		flush()
		item = 1
		para = substr($0, 3)
		para_at = FNR
	} else if ($0 ~ /^[ \t]*([*+]|[0-9]+\.) /)
		fail("a list md2man.awk does not know")
	else if (para == "") {
		para = trim($0)
		para_at = FNR
	} else
		para = para " " trim($0)
	next
}

FNR == 1 {
	flush()
	table = 0
}

$0 == "@BODY@" {
	if (!started)
		fail("no \"## \" heading in " ARGV[1])
	printf "%s", body
	next
}

{ print }

END {
	if (failed)
		exit 1
	if (fence)
		fail("a code block that does not end")
}
