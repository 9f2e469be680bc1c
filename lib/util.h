/*
 * lib/: small helpers below every module (fcgi, core, providers and store
 * may all use them; they use nothing of ours).
 */
#ifndef SG_UTIL_H
#define SG_UTIL_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

/* New reference: a JSON string of buf[0..len), invalid UTF-8 (a peer's
 * bytes, or a cap that cut a character) replaced by U+FFFD, so a key is
 * never dropped. NULL only when out of memory. */
json_t	*sg_json_string_lossy(const char *buf, size_t len);

/* Bytes of the well-formed UTF-8 sequence at s[0..n) (1..4: no overlong
 * form, surrogate or value past U+10FFFF), or 0. */
size_t	 sg_utf8_len(const unsigned char *s, size_t n);

/* 1 when the environment names a proxy libcurl would take for an http or
 * https URL, or hosts to reach without one (no_proxy); read once. When it
 * names none, a handle told so (an empty CURLOPT_PROXY and NOPROXY) does
 * not look again on each transfer. */
int	 sg_proxy_env(void);

/* How many of the bytes at p[0..n) are well-formed UTF-8, from the
 * first (n when all are); ASCII eight bytes a step. */
size_t	 sg_utf8_prefix(const char *p, size_t n);

/* How many of the bytes at p[0..n) may stand in a JSON string as they
 * are, from the first: ASCII from the space up but a quote and a
 * backslash (what sg_jdump writes as it is, and sg_jparse reads). Eight
 * bytes a step (a model turn's text is mostly such runs). */
size_t	 sg_json_plain(const char *p, size_t n);
/* src (NULL: "") into dst of size bytes, cut to fit and always ended
 * (size > 0): snprintf(dst, size, "%s", src) without printf's ~400
 * instructions. dst. */
char	*sg_copy(char *dst, size_t size, const char *src);
/* The strings given (a NULL ends the list, and the compiler holds every
 * call to one) one after the other into dst of size bytes, cut to fit
 * and ended (nothing written when size is 0): snprintf with "%s%s..."
 * without printf. The length it would have had, as snprintf's (>= size:
 * cut). */
size_t	 sg_join(char *dst, size_t size, ...)
	    __attribute__((sentinel));
/* v in decimal into buf of size bytes (24 hold any), as "%lld" would,
 * without printf; "" when it does not fit (nothing when size is 0).
 * buf. */
char	*sg_dec(char *buf, size_t size, long long v);

/* New NUL-terminated copy of buf[0..len) with invalid UTF-8 replaced by
 * U+FFFD; its length in *outlen. NULL only when out of memory. */
char	*sg_utf8_fix(const char *buf, size_t len, size_t *outlen);

/*
 * What parsing buf[0..len) as JSON would build, found in one pass without
 * building it: an upper bound on the values (1 + every '[', '{' and ','
 * outside strings) and, in *depth, the deepest nesting. Lets a caller
 * refuse a body or a peer's line that would make a huge tree (each value
 * costs Jansson tens of bytes, so 2 bytes of "0," become 40).
 */
size_t	 sg_json_size(const char *buf, size_t len, int *depth);

/* A growing byte string, NUL-terminated once anything was added. */
struct sg_buf {
	char	*p;
	size_t	 len, cap;
};

/* Room for n more bytes at once (a writer that knows its length grows
 * the buffer once): 0, or -1 when out of memory (b is then unchanged). */
int	 sg_buf_reserve(struct sg_buf *, size_t n);
/* Append n bytes: 0, or -1 when out of memory (b is then unchanged). */
int	 sg_buf_add(struct sg_buf *, const void *, size_t n);
/* Append printf's text: 0, or -1 when out of memory (b unchanged). */
int	 sg_buf_printf(struct sg_buf *, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

/* Fill out with prefix + 2*nbytes random hex digits; out must hold
 * strlen(prefix) + 2*nbytes + 1. Returns 0, or -1 if the kernel's random
 * source failed. */
int	 sg_rand_id(char *out, size_t outsz, const char *prefix, size_t nbytes);
/* v's low 4 * digits bits as that many lower-case hex digits into out,
 * the first the highest; no NUL. */
void	 sg_hex(char *out, uint64_t v, int digits);
/* As sg_rand_id, the first 13 hex digits the time: 8 of the Unix
 * seconds (as OpenAI's ids begin), 5 of the microsecond. Ids made one
 * after the other sort by time, so a store's index on them takes each
 * new one at its end, on a page already being written, not at a random
 * page (a response's items: five pages of the WAL a commit where one
 * does). Not for a secret (a key): 13 of its digits are guessable.
 * nbytes at least 8; -1 as sg_rand_id's, or for a smaller nbytes. */
int	 sg_time_id(char *out, size_t outsz, const char *prefix, size_t nbytes);

/* Lower-case hex SHA-256 of buf into out[65]. */
void	 sg_sha256_hex(const void *buf, size_t len, char out[65]);

/* Milliseconds of a monotonic clock. */
int64_t	 sg_now_ms(void);
/* The wall clock, unix ms: what is recorded (sg_now_ms only measures). */
int64_t	 sg_wall_ms(void);

/* Constant-time compare of two equal-length buffers: 1 when equal. */
int	 sg_secret_eq(const void *a, const void *b, size_t len);

/* The start time of a process (clock ticks since boot, /proc/PID/stat
 * field 22): with its pid, names a process even after the pid is reused.
 * 0 when unknown. */
int64_t	 sg_proc_start(int pid);
/* src percent-encoded into out[sz]: letters, digits and the bytes in keep
 * as they are, every other byte %XX. 0, or -1 when it does not fit. */
int	 sg_pct_encode(const char *src, const char *keep, char *out, size_t sz);
/* The value of hex digit c (either case), or -1. */
int	 sg_hexval(int c);
/* FNV-1a of a string: a quick 64-bit hash, not a secure one. */
uint64_t sg_fnv1a(const char *);
/* sg_proc_start of this process, read once per process. */
int64_t	 sg_self_start(void);
/* This process's pid, asked of the kernel once per process (glibc does
 * not cache it; a fork's child asks again). */
pid_t	 sg_pid(void);

#endif
