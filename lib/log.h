/*
 * sg_log: lines on stderr that no sandbox's or client's bytes can forge.
 * Every process of sandgate shares one stderr, read as one line per
 * event; a path the code wrote, a provider's message or a model's name
 * holding a newline would end its line and start one of its own. So
 * whatever a line carries, a control character (C0, DEL, C1), U+2028,
 * U+2029, a backslash and any byte that is not part of well-formed UTF-8
 * become \xNN; well-formed UTF-8 stays readable.
 */
#ifndef SG_LOG_H
#define SG_LOG_H

#include <stddef.h>

/* One line on stderr: printf's text, escaped, cut at about 3 KiB (so
 * that it goes out in one write: the lines of processes sharing stderr
 * never interleave). */
void	 sg_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* src escaped as a key=value field of a line into dst[dstsz] (dstsz >=
 * 8): spaces too, so it never shifts the fields after it; too long, it is
 * cut where a character or an escape ends and ends in "...". */
void	 sg_log_field(char *dst, size_t dstsz, const char *src);

#endif
