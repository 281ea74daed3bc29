/* A job whose files travel with it: every process reads the input file the JobProfile put in
 * its working directory (the job's directory at its cluster), the job checks they all read
 * the same bytes (an all-reduce of a checksum), and one process per cluster's part -- the
 * lowest rank in its working directory -- writes the output the profile brings back.
 *
 *   staged INPUT OUTPUT   (says where it runs from: argv[0] and the working directory)
 */
#include <string.h>
#include <unistd.h>

#include "check.h"

int main(int argc, char** argv) {
  int rank, size;
  if (!start(&argc, &argv, "staged", 1, &rank, &size)) return 2;
  const char* input = argc > 1 ? argv[1] : "input.txt";
  const char* output = argc > 2 ? argv[2] : "result.txt";
  char text[4096] = "";
  FILE* in = fopen(input, "r");
  CHECK(in != NULL, "cannot open %s in the working directory", input);
  size_t n = in ? fread(text, 1, sizeof text - 1, in) : 0;
  if (in) fclose(in);
  text[n] = 0;
  unsigned long sum = 0; /* (unsigned: it wraps, as a checksum should) */
  for (size_t i = 0; i < n; ++i) sum = sum * 31 + (unsigned char)text[i];
  unsigned long low = 0, high = 0;
  MPI_Allreduce(&sum, &low, 1, MPI_UNSIGNED_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&sum, &high, 1, MPI_UNSIGNED_LONG, MPI_MAX, MPI_COMM_WORLD);
  CHECK(low == high && n > 0, "the processes read different inputs (or none)");
  char cwd[4096] = "";
  CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
  printf("staged: rank %d runs %s in %s\n", rank, argv[0], cwd);
  /* The lowest rank in each working directory writes the output. */
  char* dirs = malloc((size_t)size * sizeof cwd);
  MPI_Allgather(cwd, sizeof cwd, MPI_CHAR, dirs, sizeof cwd, MPI_CHAR, MPI_COMM_WORLD);
  int first_here = 1;
  for (int r = 0; r < rank; ++r)
    if (strcmp(dirs + (size_t)r * sizeof cwd, cwd) == 0) first_here = 0;
  free(dirs);
  if (first_here) {
    FILE* out = fopen(output, "w");
    CHECK(out != NULL, "cannot write %s", output);
    if (out) {
      fprintf(out, "rank %d of %d read: %s", rank, size, text);
      fclose(out);
    }
  }
  return finish("staged");
}
