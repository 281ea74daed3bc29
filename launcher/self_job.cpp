#include "launcher/self_job.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>

namespace gridrt {

namespace {
std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '&') out += "&amp;";
    else if (ch == '<') out += "&lt;";
    else if (ch == '>') out += "&gt;";
    else out += ch;
  }
  return out;
}
}  // namespace

int run_self_as_job(const std::string& tool, const std::string& gridrun, const std::vector<std::string>& grid_args,
                    const std::vector<std::string>& worker_args, const std::function<void(const std::string&)>& line_out) {
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  // The job: every slot of the grid runs this program as a worker with the same options.
  std::string path = "/tmp/" + tool + "-XXXXXX.xml";
  const int fd = ::mkstemps(path.data(), 4);
  if (fd < 0) {
    std::fprintf(stderr, "%s: cannot write its JobProfile in /tmp: %s\n", tool.c_str(), std::strerror(errno));
    return 1;
  }
  ::close(fd);
  {
    std::ofstream job(path);
    job << "<grmsJob appId=\"" << tool << "\"><task taskId=\"" << tool << "\"><resourcesDescription><topology>"
        << "<group groupId=\"" << tool << "\"/><processes><groupIdReference groupId=\"" << tool << "\"/>"
        << "<processesCount><value>$NPROCS</value></processesCount></processes></topology></resourcesDescription>"
        << "<execution type=\"open_mpi\"><executable><execFile><file><url>file://" << xml_escape(self.string())
        << "</url></file></execFile></executable><arguments><value>--worker</value>";
    for (const auto& a : worker_args) job << "<value>" << xml_escape(a) << "</value>";
    job << "</arguments><processesCount><value>$NPROCS</value></processesCount></execution></task></grmsJob>\n";
  }
  int out[2];
  if (::pipe(out) != 0) {
    std::fprintf(stderr, "%s: pipe: %s\n", tool.c_str(), std::strerror(errno));
    std::filesystem::remove(path);
    return 1;
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::close(out[1]);
    std::vector<std::string> args = {gridrun};
    args.insert(args.end(), grid_args.begin(), grid_args.end());
    args.push_back(path);
    std::vector<char*> cargs;
    for (auto& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    ::execv(gridrun.c_str(), cargs.data());
    std::fprintf(stderr, "%s: cannot run %s: %s\n", tool.c_str(), gridrun.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  ::close(out[1]);
  // gridrun prefixes every line with [cluster:rank].
  FILE* in = ::fdopen(out[0], "r");
  char* line = nullptr;
  std::size_t cap = 0;
  while (::getline(&line, &cap, in) > 0) {
    const char* text = line;
    if (line[0] == '[')
      if (const char* close = std::strchr(line, ']'); close && close[1] == ' ') text = close + 2;
    line_out(text);
  }
  std::free(line);
  std::fclose(in);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::filesystem::remove(path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int self_job_main(const char* name, int argc, char** argv, int (*work)(int, char**), int (*launch)(int, char**)) {
  const bool worker = argc > 1 && std::strcmp(argv[1], "--worker") == 0;
  try {
    return worker ? work(argc, argv) : launch(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace gridrt
