#define _GNU_SOURCE
#include "fbproc.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *fb_test_bin(void)
{
	const char *b = getenv("FB_BIN");
	return b ? b : "./fencebench";
}

char *fb_test_slurp(int fd)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (len + 1 >= cap)
			buf = realloc(buf, cap *= 2);
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	buf[len] = 0;
	close(fd);
	return buf;
}

char *fb_test_tmpdir(void)
{
	char *d = strdup("/tmp/fbtest-XXXXXX");
	if (!mkdtemp(d)) {
		perror("mkdtemp");
		abort();
	}
	return d;
}

void fb_test_listdir(const char *dir, char *buf, size_t len)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	buf[0] = 0;
	for (int i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, ".."))
			snprintf(buf + strlen(buf), len - strlen(buf), "%s\n", names[i]->d_name);
		free(names[i]);
	}
	if (n >= 0)
		free(names);
}

bool fb_test_find_suffix(const char *dir, const char *suffix, char *path, size_t len)
{
	DIR *d = opendir(dir);
	if (!d)
		return false;
	struct dirent *e;
	bool found = false;
	while (!found && (e = readdir(d))) {
		size_t n = strlen(e->d_name), k = strlen(suffix);
		if (n > k && !strcmp(e->d_name + n - k, suffix)) {
			snprintf(path, len, "%s/%s", dir, e->d_name);
			found = true;
		}
	}
	closedir(d);
	return found;
}

void fb_test_rmtree(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char path[4096];
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}
