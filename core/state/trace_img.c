/*
 * A request's images (trace_img.h): copied as they come while the
 * bounds allow, made JSON once at the request's end.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "trace.h"
#include "trace_img.h"
#include "../../lib/jdump.h"

static const char B64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const unsigned char SIGNATURE[8] = {
	0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'
};

struct image {
	size_t	 round, run;
	char	*b64;		/* owned */
};

static struct {
	struct image	 kept[SG_TRACE_IMAGES_MAX];
	size_t		 n;
	size_t		 bytes;		/* of base64 kept */
} im;

int
sg_timg_png(const char *s, size_t n)
{
	unsigned char head[9];
	size_t body = n;

	/* Whole groups of four; the signature's 8 bytes are in the first
	 * twelve characters. */
	if (s == NULL || n < 12 || n % 4 != 0)
		return 0;
	if (s[n - 1] == '=')
		body -= s[n - 2] == '=' ? 2 : 1;
	/* Every character but the padding from the alphabet (strspn stops
	 * at a NUL inside the string too); OpenSSL's decoder would take a
	 * '=' or a space anywhere. */
	if (strspn(s, B64) != body)
		return 0;
	return EVP_DecodeBlock(head, (const unsigned char *)s, 12) == 9 &&
	    memcmp(head, SIGNATURE, sizeof(SIGNATURE)) == 0;
}

int
sg_timg_add(size_t round, size_t run, const json_t *result)
{
	const json_t *r, *png;
	struct image *p;
	size_t i, len;
	int omitted = 0;

	json_array_foreach(json_object_get(result, "results"), i, r) {
		png = json_object_get(r, "png");
		len = json_string_length(png);
		if (!sg_timg_png(json_string_value(png), len))
			continue;
		if (im.n == SG_TRACE_IMAGES_MAX || len >
		    SG_TRACE_IMAGES_BYTES - im.bytes) {
			omitted++;
			continue;
		}
		p = &im.kept[im.n];
		if ((p->b64 = strndup(json_string_value(png), len)) == NULL) {
			omitted++;
			continue;
		}
		p->round = round;
		p->run = run;
		im.bytes += len;
		im.n++;
	}
	return omitted;
}

/* New reference: image p as the stored JSON, or NULL. */
static json_t *
image_json(const struct image *p)
{
	json_t *url = json_sprintf("data:image/png;base64,%s", p->b64);

	if (url == NULL)
		return NULL;
	return json_pack("{s:I,s:I,s:o}", "round", (json_int_t)p->round + 1,
	    "run", (json_int_t)p->run, "url", url);
}

char *
sg_timg_json(size_t skip_from, size_t skip_to)
{
	json_t *all = json_array(), *o;
	char *text = NULL;
	size_t i;

	for (i = 0; i < im.n && all != NULL; i++) {
		if (im.kept[i].round >= skip_from && im.kept[i].round < skip_to)
			continue;
		/* An image that cannot be written is left out, not the rest. */
		if ((o = image_json(&im.kept[i])) != NULL)
			json_array_append_new(all, o);
	}
	if (json_array_size(all) > 0)
		text = sg_jdump_text(all, NULL);
	json_decref(all);
	return text;
}

void
sg_timg_reset(void)
{
	size_t i;

	for (i = 0; i < im.n; i++)
		free(im.kept[i].b64);
	memset(&im, 0, sizeof(im));
}
