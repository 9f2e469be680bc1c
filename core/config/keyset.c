/*
 * A key's settings as JSON (see keyset.h), checked as the config file's
 * are: the same names, the same bounds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "keyset.h"

static const char *const periods[] = { "day", "week", "month", NULL };

void
sg_keyset_init(struct sg_cfg_key *k)
{
	memset(k, 0, sizeof(*k));
	sg_cfg_limits_unset(&k->limits);
}

void
sg_keyset_clear(struct sg_cfg_key *k)
{
	size_t i;

	for (i = 0; i < k->ntools; i++)
		free(k->tools[i]);
	free(k->tools);
	k->tools = NULL;
	k->ntools = 0;
}

/* An integer member in [min, max] into *out, when present. */
static int
integer(const json_t *o, const char *name, long long min, long long max,
    long long *out, char *err, size_t errsz)
{
	const json_t *v = json_object_get(o, name);

	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < min ||
	    json_integer_value(v) > max) {
		snprintf(err, errsz, "'%s' must be an integer from %lld to %lld.",
		    name, min, max);
		return -1;
	}
	*out = json_integer_value(v);
	return 0;
}

static int
tools_of(const json_t *v, struct sg_cfg_key *k, char *err, size_t errsz)
{
	const json_t *t;
	size_t i, n;

	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_array(v) || (n = json_array_size(v)) > 64) {
		snprintf(err, errsz, "'tools' must be an array of at most 64 "
		    "sandbox tool names.");
		return -1;
	}
	sg_keyset_clear(k);
	if ((k->tools = calloc(n + 1, sizeof(char *))) == NULL) {
		snprintf(err, errsz, "out of memory");
		return -1;
	}
	json_array_foreach(v, i, t) {
		if (!json_is_string(t) || json_string_length(t) == 0 ||
		    json_string_length(t) > 63 ||
		    (k->tools[i] = strdup(json_string_value(t))) == NULL) {
			snprintf(err, errsz, "'tools' must be an array of sandbox "
			    "tool names.");
			sg_keyset_clear(k);
			return -1;
		}
		k->ntools = i + 1;
	}
	return 0;
}

int
sg_keyset_read(const json_t *o, struct sg_cfg_key *k, char *err,
    size_t errsz, const char **param)
{
	const json_t *v;
	long long mc = k->max_concurrent;
	size_t i;

	*param = NULL;
	if (!json_is_object(o)) {
		snprintf(err, errsz, "A key's settings must be an object.");
		return -1;
	}
#define INT(n, lo, hi, dst) \
	if (integer(o, n, lo, hi, dst, err, errsz) == -1) { \
		*param = n; \
		return -1; \
	}
	INT("rpm", 0, 100000000, &k->limits.rpm);
	INT("tpm", 0, 1LL << 40, &k->limits.tpm);
	INT("sandbox_seconds", 0, 1LL << 40, &k->limits.sandbox_seconds);
	INT("max_concurrent", 1, 100000, &mc);
#undef INT
	k->max_concurrent = (int)mc;
	v = json_object_get(o, "budget");
	if (v != NULL && !json_is_null(v)) {
		if (!json_is_number(v) || json_number_value(v) < 0 ||
		    json_number_value(v) > 1e9) {
			*param = "budget";
			snprintf(err, errsz, "'budget' must be a number of US "
			    "dollars from 0 to 1e9.");
			return -1;
		}
		k->limits.budget = json_number_value(v);
	}
	v = json_object_get(o, "budget_period");
	if (v != NULL && !json_is_null(v)) {
		for (i = 0; periods[i] != NULL; i++)
			if (json_is_string(v) && strcmp(json_string_value(v),
			    periods[i]) == 0)
				break;
		if (periods[i] == NULL) {
			*param = "budget_period";
			snprintf(err, errsz, "'budget_period' must be one of day, "
			    "week or month.");
			return -1;
		}
		k->limits.period = (int)i;
	}
	if (tools_of(json_object_get(o, "tools"), k, err, errsz) == -1) {
		*param = "tools";
		return -1;
	}
	return 0;
}

int
sg_keyset_parse(const char *text, struct sg_cfg_key *k, char *err,
    size_t errsz)
{
	const char *param;
	json_t *o;
	int rc;

	if (text == NULL || *text == '\0')
		return 0;
	if ((o = json_loads(text, 0, NULL)) == NULL) {
		snprintf(err, errsz, "a key's stored settings are not JSON");
		return -1;
	}
	rc = sg_keyset_read(o, k, err, errsz, &param);
	json_decref(o);
	return rc;
}

json_t *
sg_keyset_json(const struct sg_cfg_key *k)
{
	json_t *o = json_object(), *tools;
	size_t i;

	if (k->limits.rpm >= 0)
		json_object_set_new(o, "rpm", json_integer(k->limits.rpm));
	if (k->limits.tpm >= 0)
		json_object_set_new(o, "tpm", json_integer(k->limits.tpm));
	if (k->limits.budget >= 0)
		json_object_set_new(o, "budget", json_real(k->limits.budget));
	if (k->limits.period >= 0 && k->limits.period <= SG_PERIOD_MONTH)
		json_object_set_new(o, "budget_period",
		    json_string(periods[k->limits.period]));
	if (k->limits.sandbox_seconds >= 0)
		json_object_set_new(o, "sandbox_seconds",
		    json_integer(k->limits.sandbox_seconds));
	if (k->max_concurrent > 0)
		json_object_set_new(o, "max_concurrent",
		    json_integer(k->max_concurrent));
	if (k->tools != NULL) {
		tools = json_array();
		for (i = 0; i < k->ntools; i++)
			json_array_append_new(tools, json_string(k->tools[i]));
		json_object_set_new(o, "tools", tools);
	}
	return o;
}
