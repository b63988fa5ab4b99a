/*
 * Without libFuzzer, a fuzz target becomes a program that feeds it every file
 * named on the command line (directories are walked one level), so the
 * corpus and crash reproducers still run as regression tests.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return 1;
	}
	size_t cap = 4096, len = 0;
	uint8_t *buf = malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap)
			buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	if (!buf)
		return 1;
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int runs = 0, bad = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (argv[i][0] == '-' || stat(argv[i], &st) < 0)
			continue;
		if (!S_ISDIR(st.st_mode)) {
			bad |= run_file(argv[i]);
			runs++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			char path[4096];
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			bad |= run_file(path);
			runs++;
		}
		if (d)
			closedir(d);
	}
	printf("replayed %d inputs\n", runs);
	return bad;
}
