#define _GNU_SOURCE
#include "output.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

const char *fb_grouped(char *buf, size_t len, double v)
{
	char raw[48];
	snprintf(raw, sizeof raw, "%.0f", fabs(v));
	size_t n = strlen(raw), o = 0;
	if (v <= -0.5 && o + 1 < len)
		buf[o++] = '-';
	for (size_t i = 0; i < n && o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = raw[i];
	}
	buf[o] = 0;
	return buf;
}

int fb_mkdir_p(const char *path)
{
	char p[4096];
	if (snprintf(p, sizeof p, "%s", path) >= (int)sizeof p) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0777) && errno != EEXIST)
			return -1;
		*s = '/';
	}
	if (mkdir(p, 0777) && errno != EEXIST)
		return -1;
	return 0;
}

void fb_cpu_model(char *cpu, size_t len)
{
	snprintf(cpu, len, "unknown");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof line, f)) {
		char *c = strchr(line, ':');
		if (strncmp(line, "model name", 10) != 0 || !c)
			continue;
		c += 1 + (c[1] == ' ');
		c[strcspn(c, "\n")] = 0;
		snprintf(cpu, len, "%s", c);
		break;
	}
	fclose(f);
}

json_object *fb_json_machine(void)
{
	json_object *o = json_object_new_object();
	char cpu[256], kernel[300] = "unknown";
	fb_cpu_model(cpu, sizeof cpu);
	struct utsname u;
	if (uname(&u) == 0)
		snprintf(kernel, sizeof kernel, "%s %s %s", u.sysname, u.release, u.machine);
	json_object_object_add(o, "cpu", json_object_new_string(cpu));
	json_object_object_add(o, "cores",
	                       json_object_new_uint64((uint64_t)sysconf(_SC_NPROCESSORS_ONLN)));
	json_object_object_add(o, "kernel", json_object_new_string(kernel));
#if defined(__clang__)
	json_object_object_add(o, "compiler", json_object_new_string("clang " __clang_version__));
#elif defined(__GNUC__)
	json_object_object_add(o, "compiler", json_object_new_string("gcc " __VERSION__));
#endif
	return o;
}

void fb_say_write_fenced_lost(FILE *out, int64_t lost)
{
	char n[32];
	fprintf(out,
	        "write-fenced: no stale write, but %s %s lost (reads were not fenced: two "
	        "holders read the same balance, both writes went forward)\n",
	        fb_grouped(n, sizeof n, (double)lost), lost == 1 ? "update" : "updates");
}

void fb_say_unfenced_corrupted(FILE *out, uint64_t stale, int64_t lost)
{
	char a[32], b[32];
	fprintf(out, "unfenced: CORRUPTED (%s stale %s accepted, %s %s erased)\n",
	        fb_grouped(a, sizeof a, (double)stale), stale == 1 ? "write" : "writes",
	        fb_grouped(b, sizeof b, (double)lost), lost == 1 ? "debit" : "debits");
}
