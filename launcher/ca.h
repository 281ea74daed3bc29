// gridrun ca: the grid's certificate authority on the command line (docs/security.md).
#pragma once

namespace gridrt {

// argv[0] is "ca". Returns the exit status: 0 done, 2 bad usage, 1 could not do it.
int ca_command(int argc, char** argv);

}  // namespace gridrt
