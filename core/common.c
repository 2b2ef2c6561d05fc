#include "common.h"

const char *fb_strerror(fb_err e)
{
	switch (e) {
	case FB_OK:
		return "success";
	case FB_ENOMEM:
		return "out of memory";
	case FB_EINVAL:
		return "invalid argument";
	case FB_EFENCE:
		return "fence space exhausted";
	case FB_ESYS:
		return "system call failed";
	}
	return "unknown error";
}
