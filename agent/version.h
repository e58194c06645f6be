/* The agent's version report (--version). */
#ifndef CONSTEL_VERSION_H
#define CONSTEL_VERSION_H

#include <stdio.h>

void version_print(FILE *f);

#endif
