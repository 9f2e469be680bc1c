/*
 * Files into sandboxes: a file the gateway keeps (files.dir) written into
 * a sandbox under /mnt/data, where OpenAI's code interpreter finds the
 * files it is given, by the provider's own files API.
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "files.h"
#include "sandbox.h"

void
sg_sbx_data_path(const char *filename, char *out, size_t sz)
{
	snprintf(out, sz, "%s/%s", SG_SBX_DATA_DIR, filename);
}

int
sg_sbx_put_file(struct sg_sbx_env *env, const char *tenant, const char *id,
    const struct sg_store_file *f, struct sg_error *err)
{
	const struct sg_provider_ops *ops;
	const struct sg_tool *t;
	struct sg_store_sbx row;
	struct sg_prov_error pe;
	char dest[512];
	json_t *handle;
	struct stat st;
	struct sg_files_env fenv = { env->cfg, env->store };
	int fd = -1, rc;

	if ((fd = sg_files_open(&fenv, f, err)) == -1)
		return -1;
	if (fstat(fd, &st) == -1) {
		close(fd);
		return sg_error_server(err, 500, "The bytes of file %s cannot "
		    "be read.", f->id);
	}
	sg_sbx_data_path(f->filename, dest, sizeof(dest));
	if (sg_sbx_open(env, tenant, id, &row, &t, &ops, &handle, err) == -1) {
		close(fd);
		return -1;
	}
	if (ops->put == NULL)
		rc = sg_prov_fail(&pe, SG_PROV_CONFIG, 0, "sandbox tool %s (%s) "
		    "cannot take files yet", t->name,
		    sg_provider_name(t->provider));
	else
		rc = ops->put(env->prov, t, handle, dest, fd, (int64_t)st.st_size,
		    &pe);
	close(fd);
	json_decref(handle);
	sg_store_sbx_clear(&row);
	if (rc == SG_PROV_GONE) {
		/* The caller may replace the sandbox; if not, this is why. */
		sg_error_server(err, 502, "Sandbox tool %s: %s", t->name,
		    pe.message);
		return SG_SBX_GONE;
	}
	return rc == SG_PROV_OK ? 0 : sg_sbx_prov_error(t, &pe, id, err);
}

int
sg_sbx_hidden(const char *rel)
{
	size_t n;

	for (;;) {
		n = strcspn(rel, "/");
		if (n == 0 || rel[0] == '.' || (n == 11 &&
		    strncmp(rel, "__pycache__", 11) == 0))
			return 1;
		if (rel[n] == '\0')
			return 0;
		rel += n + 1;
	}
}
