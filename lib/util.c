#include <sys/random.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "util.h"

#define ONES	0x0101010101010101ULL
#define HIGHS	0x8080808080808080ULL

/* Nonzero when a byte of x is below b (b <= 0x80). A borrow may mark a
 * byte above one below b too, never one under it: the lowest byte
 * marked is the first below b. */
static uint64_t
any_below(uint64_t x, uint64_t b)
{
	return (x - ONES * b) & ~x & HIGHS;
}

size_t
sg_utf8_prefix(const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t i = 0, k;
	uint64_t x;

	while (i < n) {
		if (i + 8 <= n) {
			memcpy(&x, s + i, 8);
			if ((x & HIGHS) == 0) {
				i += 8;
				continue;
			}
		}
		if ((k = sg_utf8_len(s + i, n - i)) == 0)
			break;
		i += k;
	}
	return i;
}

/* The bytes of x a JSON string must escape or that start a multibyte
 * character, each marked by its high bit (on a little-endian machine,
 * the lowest mark is the first such byte). */
static uint64_t
specials(uint64_t x)
{
	return (x & HIGHS) | any_below(x, 0x20) |
	    any_below(x ^ (ONES * '"'), 1) | any_below(x ^ (ONES * '\\'), 1);
}

size_t
sg_json_plain(const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t i = 0;
	uint64_t x, m;

#if defined(__SSE2__)
	/* Sixteen bytes a step where the machine has it (every x86-64):
	 * a signed compare with 0x20 finds the controls and the bytes from
	 * 0x80 at once. A model's code and a run's output are long runs. */
	const __m128i sp = _mm_set1_epi8(0x20), qu = _mm_set1_epi8('"'),
	    bs = _mm_set1_epi8('\\');
	__m128i v;
	int k;

	for (; i + 16 <= n; i += 16) {
		v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
		k = _mm_movemask_epi8(_mm_or_si128(_mm_cmplt_epi8(v, sp),
		    _mm_or_si128(_mm_cmpeq_epi8(v, qu), _mm_cmpeq_epi8(v, bs))));
		if (k != 0)
			return i + (size_t)__builtin_ctz((unsigned)k);
	}
#endif
	for (; i + 8 <= n; i += 8) {
		memcpy(&x, s + i, 8);
		if ((m = specials(x)) != 0) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			return i + (size_t)__builtin_ctzll(m) / 8;
#else
			break;
#endif
		}
	}
	while (i < n && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' &&
	    s[i] != '\\')
		i++;
	return i;
}

char *
sg_copy(char *dst, size_t size, const char *src)
{
	size_t n;

	if (size == 0)
		return dst;
	n = src != NULL ? strnlen(src, size - 1) : 0;
	if (n > 0)
		memcpy(dst, src, n);
	dst[n] = '\0';
	return dst;
}

size_t
sg_join(char *dst, size_t size, ...)
{
	const char *s;
	size_t len = 0, n, k;
	va_list ap;

	va_start(ap, size);
	while ((s = va_arg(ap, const char *)) != NULL) {
		n = strlen(s);
		if (len + 1 < size) {
			k = size - 1 - len < n ? size - 1 - len : n;
			memcpy(dst + len, s, k);
		}
		len += n;
	}
	va_end(ap);
	if (size > 0)
		dst[len < size ? len : size - 1] = '\0';
	return len;
}

char *
sg_dec(char *buf, size_t size, long long v)
{
	char num[24], *e = num + sizeof(num), *q = e;
	size_t n;
	/* As unsigned: the most negative value has no positive twin. */
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v :
	    (unsigned long long)v;

	do
		*--q = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*--q = '-';
	if (size == 0)
		return buf;
	if ((n = (size_t)(e - q)) >= size)
		n = 0;
	memcpy(buf, q, n);
	buf[n] = '\0';
	return buf;
}

int
sg_proxy_env(void)
{
	/* libcurl reads http_proxy in lower case only (HTTP_PROXY could be a
	 * CGI client's Proxy: header), the others in both. */
	static const char *const names[] = { "http_proxy", "https_proxy",
	    "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY",
	    NULL };
	static int named = -1;
	int i;

	if (named == -1)
		for (named = 0, i = 0; names[i] != NULL; i++)
			if (getenv(names[i]) != NULL)
				named = 1;
	return named;
}

size_t
sg_utf8_len(const unsigned char *s, size_t n)
{
	size_t need, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		need = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		need = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		need = 4;
		cp = s[0] & 0x07;
	} else
		return 0;
	if (n < need)
		return 0;
	for (i = 1; i < need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and values past U+10FFFF. */
	if ((need == 3 && cp < 0x800) || (need == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return need;
}

char *
sg_utf8_fix(const char *buf, size_t len, size_t *outlen)
{
	const unsigned char *s = (const unsigned char *)buf;
	char *fixed, *p;
	size_t i, n;

	/* Worst case every byte becomes the 3-byte U+FFFD. */
	if ((fixed = malloc(len * 3 + 1)) == NULL)
		return NULL;
	for (p = fixed, i = 0; i < len; i += n) {
		n = sg_utf8_len(s + i, len - i);
		if (n == 0) {
			memcpy(p, "\xef\xbf\xbd", 3);
			p += 3;
			n = 1;
		} else {
			memcpy(p, s + i, n);
			p += n;
		}
	}
	*p = '\0';
	*outlen = (size_t)(p - fixed);
	return fixed;
}

json_t *
sg_json_string_lossy(const char *buf, size_t len)
{
	size_t flen;
	char *fixed;
	json_t *j;

	j = json_stringn(buf, len);
	if (j != NULL || len == 0)
		return j;
	if ((fixed = sg_utf8_fix(buf, len, &flen)) == NULL)
		return NULL;
	j = json_stringn(fixed, flen);
	free(fixed);
	return j;
}

size_t
sg_json_size(const char *buf, size_t len, int *depth)
{
	size_t i, values = 1;
	int d = 0, in_str = 0;

	*depth = 0;
	for (i = 0; i < len; i++) {
		char c = buf[i];

		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
			continue;
		}
		switch (c) {
		case '"':
			in_str = 1;
			break;
		case '[':
		case '{':
			values++;
			if (++d > *depth)
				*depth = d;
			break;
		case ']':
		case '}':
			d--;
			break;
		case ',':
			values++;
			break;
		}
	}
	return values;
}

int
sg_buf_reserve(struct sg_buf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 256;
	char *np;

	if (b->len + n + 1 > b->cap) {
		while (cap < b->len + n + 1)
			cap *= 2;
		if ((np = realloc(b->p, cap)) == NULL)
			return -1;
		b->p = np;
		b->cap = cap;
	}
	return 0;
}

int
sg_buf_add(struct sg_buf *b, const void *p, size_t n)
{
	if (sg_buf_reserve(b, n) == -1)
		return -1;
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int
sg_buf_printf(struct sg_buf *b, const char *fmt, ...)
{
	va_list ap;
	char *text;
	int n, rc;

	va_start(ap, fmt);
	n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n == -1)
		return -1;
	rc = sg_buf_add(b, text, (size_t)n);
	free(text);
	return rc;
}

static const char hexdigits[] = "0123456789abcdef";

/* b[0..n) as 2n lower-case hex digits into out (no NUL). */
static void
bytes_hex(char *out, const unsigned char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hexdigits[b[i] >> 4];
		out[2 * i + 1] = hexdigits[b[i] & 0x0f];
	}
}

void
sg_hex(char *out, uint64_t v, int digits)
{
	while (digits-- > 0) {
		out[digits] = hexdigits[v & 0x0f];
		v >>= 4;
	}
}

int
sg_rand_id(char *out, size_t outsz, const char *prefix, size_t nbytes)
{
	unsigned char raw[64];
	size_t plen = strlen(prefix);
	ssize_t got;

	if (nbytes > sizeof(raw) || outsz < plen + 2 * nbytes + 1)
		return -1;
	do
		got = getrandom(raw, nbytes, 0);
	while (got < 0 && errno == EINTR);
	if (got != (ssize_t)nbytes)
		return -1;
	memcpy(out, prefix, plen);
	bytes_hex(out + plen, raw, nbytes);
	out[plen + 2 * nbytes] = '\0';
	return 0;
}

int
sg_time_id(char *out, size_t outsz, const char *prefix, size_t nbytes)
{
	struct timespec ts;

	if (nbytes < 8 || sg_rand_id(out, outsz, prefix, nbytes) == -1)
		return -1;
	clock_gettime(CLOCK_REALTIME, &ts);
	/* Seconds in the top 32 bits of 52, the microsecond below. */
	sg_hex(out + strlen(prefix), ((uint64_t)(uint32_t)ts.tv_sec << 20) |
	    (uint64_t)(ts.tv_nsec / 1000), 13);
	return 0;
}

void
sg_sha256_hex(const void *buf, size_t len, char out[65])
{
	/* Fetched once: OpenSSL 3 looks EVP_sha256() up again on every
	 * digest, which costs more than hashing a key. */
	static EVP_MD *sha256;
	unsigned char md[32];
	unsigned int mdlen = 0;

	if (sha256 == NULL)
		sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
	EVP_Digest(buf, len, md, &mdlen, sha256 != NULL ? sha256 :
	    EVP_sha256(), NULL);
	bytes_hex(out, md, sizeof(md));
	out[64] = '\0';
}

int64_t
sg_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
sg_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
sg_secret_eq(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) == 0;
}

uint64_t
sg_fnv1a(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

static pid_t cached_pid;

static void
forget_pid(void)
{
	cached_pid = 0;
}

pid_t
sg_pid(void)
{
	static int hooked;

	if (cached_pid == 0) {
		if (!hooked && pthread_atfork(NULL, NULL, forget_pid) == 0)
			hooked = 1;
		if (!hooked)
			return getpid();
		cached_pid = getpid();
	}
	return cached_pid;
}

/* Ours does not change: read once per process (a fork is another). */
int64_t
sg_self_start(void)
{
	static pid_t pid;
	static int64_t start;

	if (pid != sg_pid()) {
		pid = sg_pid();
		start = sg_proc_start((int)pid);
	}
	return start;
}

int64_t
sg_proc_start(int pid)
{
	char path[64], buf[1024], *p;
	long long start = 0;
	size_t n;
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: skip past the
	 * last ')', then count fields from the state (field 3). */
	if ((p = strrchr(buf, ')')) == NULL)
		return 0;
	for (i = 2; i < 22 && p != NULL; i++)
		p = strchr(p + 1, ' ');
	if (p != NULL)
		start = atoll(p + 1);
	return start;
}

int
sg_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
sg_pct_encode(const char *src, const char *keep, char *out, size_t sz)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;
	unsigned char c;

	int plain;

	if (sz == 0)
		return -1;
	for (; *src != '\0'; src++) {
		c = (unsigned char)*src;
		plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr(keep, c) != NULL;
		/* Room for this byte's encoding and the NUL after it. */
		if (o + (plain ? 1 : 3) >= sz)
			return -1;
		if (plain)
			out[o++] = (char)c;
		else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return 0;
}
