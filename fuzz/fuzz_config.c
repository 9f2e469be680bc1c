/*
 * The config loader over any file: a typo, a wrong type, a huge number,
 * a deep group must be a clear error with a line number, never a crash
 * or a leak. The input is written to a memfd and loaded by its path.
 * Secrets (env:, file:) resolve as they would; nothing is created.
 */
#include <sys/mman.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/config/config.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sg_cfg *cfg = NULL;
	char path[64], err[8192];
	int fd;

	if ((fd = memfd_create("sandgate-fuzz.conf", 0)) == -1)
		abort();
	if (write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err[0] = '\0';
	if (sg_cfg_load(path, &cfg, err, sizeof(err)) == 0)
		sg_cfg_free(cfg);
	else if (err[0] == '\0')
		abort();	/* a refusal always says why */
	close(fd);
	return 0;
}
