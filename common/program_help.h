/* --help for gridrt's benchmark and test programs (C and C++): each passes its usage text,
 * which is printed, and the program ends with status 0, when --help or -h is among its
 * arguments — before it starts MPI or joins a job, so that asking is always safe. */
#ifndef GRIDRT_PROGRAM_HELP_H
#define GRIDRT_PROGRAM_HELP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void gridrt_help_if_asked(int argc, char** argv, const char* usage) {
  for (int i = 1; i < argc; ++i)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(usage, stdout);
      exit(0);
    }
}

#endif
