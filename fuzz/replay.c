/*
 * The fuzz targets without libFuzzer: each file named on the command line
 * (or each file of a directory) goes once through LLVMFuzzerTestOneInput.
 * `make test` runs every target this way over its seed corpus and the
 * inputs that once crashed it (fuzz/regress/), under ASan+UBSan.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int
one(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) == -1 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) == -1 || (buf = malloc((size_t)n + 1)) == NULL ||
	    fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		if (f != NULL)
			fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

static int
walk(const char *path, int *count)
{
	struct dirent *de;
	struct stat st;
	char sub[4096];
	DIR *d;
	int rc = 0;

	if (stat(path, &st) == -1)
		return 0;	/* no such corpus: nothing to replay */
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return one(path);
	}
	if ((d = opendir(path)) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (walk(sub, count) == -1)
			rc = -1;
	}
	closedir(d);
	return rc;
}

int
main(int argc, char **argv)
{
	int i, count = 0, rc = 0;

	for (i = 1; i < argc; i++)
		if (walk(argv[i], &count) == -1)
			rc = 1;
	printf("%s: %d inputs replayed\n", argv[0], count);
	return rc;
}
