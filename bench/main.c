#include <stdio.h>
#include "common.h"
int main(void) { printf("fencebench %s\n", FB_VERSION); return 0; }
