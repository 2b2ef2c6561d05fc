/* What the end-to-end tests share: the binary under test, reading a pipe to
 * the end, and scratch directories. */
#ifndef FB_PROC_H
#define FB_PROC_H

#include <stdbool.h>
#include <stddef.h>

/* The binary under test: $FB_BIN (make test sets it per flavour). */
const char *fb_test_bin(void);

/* Everything left on fd, NUL-terminated; closes fd. Free it. */
char *fb_test_slurp(int fd);

/* A fresh directory under /tmp (free the name), its listing (names one a
 * line in sorted order, . and .. left out), the first file ending in suffix, removal of it
 * and its plain files. */
char *fb_test_tmpdir(void);
void fb_test_listdir(const char *dir, char *buf, size_t len);
bool fb_test_find_suffix(const char *dir, const char *suffix, char *path, size_t len);
void fb_test_rmtree(const char *dir);

#endif
