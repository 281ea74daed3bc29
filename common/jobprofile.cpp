#include "common/jobprofile.h"
#include "common/process.h"
#include "common/staging.h"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <functional>
#include <set>

namespace gridrt {
namespace {

// Replaces $NAME and ${NAME}, and $$ by one $ (for a shell's own variables in an
// argument); fails on an undefined variable, naming it and the element.
std::string substitute(const XmlFile& f, const pugi::xml_node& n, const std::string& in, const Variables& vars) {
  std::string out;
  for (std::size_t i = 0; i < in.size();) {
    if (in[i] != '$') {
      out += in[i++];
      continue;
    }
    if (i + 1 < in.size() && in[i + 1] == '$') {
      out += '$';
      i += 2;
      continue;
    }
    std::size_t b = i + 1;
    const bool braced = b < in.size() && in[b] == '{';
    if (braced) ++b;
    std::size_t e = b;
    while (e < in.size() && (std::isalnum(static_cast<unsigned char>(in[e])) || in[e] == '_')) ++e;
    const std::string name = in.substr(b, e - b);
    if (name.empty() || (braced && (e >= in.size() || in[e] != '}'))) f.fail(n, "malformed variable reference in '" + in + "'");
    const auto it = vars.find(name);
    if (it == vars.end()) {
      const std::string how = name == "NPROCS" ? "give -n N or --var NPROCS=N" : "give --var " + name + "=VALUE";
      f.fail(n, "undefined variable $" + name + " (" + how + ")");
    }
    out += it->second;
    i = braced ? e + 1 : e;
  }
  return out;
}

std::string value_of(const XmlFile& f, const pugi::xml_node& n, const Variables& vars) { return substitute(f, n, f.text(n), vars); }

// processesCount/value, required and positive.
std::uint32_t count_of(const XmlFile& f, const pugi::xml_node& parent, const Variables& vars) {
  const pugi::xml_node value = f.child(f.child(parent, "processesCount"), "value");
  return parse_count(f, value, value_of(f, value, vars));
}

// A URL or plain path of the profile: a path of the submitting machine (a plain path,
// relative to the current directory, or file:///abs/path), or an http(s) URL (returned as
// it is; only where `url_allowed`). Other schemes are refused, naming the element.
std::string local_or_url(const XmlFile& f, const pugi::xml_node& n, const std::string& url, bool url_allowed,
                         const std::set<std::string>& fetched = {}) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return std::filesystem::absolute(url).lexically_normal().string();
  const std::string scheme = url.substr(0, scheme_end);
  if (url_allowed && (scheme == "http" || scheme == "https" || fetched.count(scheme))) {
    if (url.size() == scheme_end + 3) f.fail(n, "URL '" + url + "' names no host");
    return url;
  }
  if (scheme != "file")
    f.fail(n, "unsupported URL scheme '" + scheme + "' in '" + url + "' (supported: " +
                  (url_allowed ? "plain paths and file:// URLs of the submitting machine, which gridrt carries to the "
                                 "clusters, and http:// and https:// URLs, which each cluster's relay fetches; a "
                                 "grid's <fetcher> adds a scheme (gridrun --url-scheme); else fetch the file to the "
                                 "submitting machine first (e.g. globus-url-copy for gsiftp://)"
                               : "a plain path or a file:// URL of a directory on the submitting machine") +
                  ")");
  std::string path = url.substr(scheme_end + 3);
  if (path.rfind("localhost/", 0) == 0) path = path.substr(9);
  if (path.empty() || path[0] != '/') f.fail(n, "file URL '" + url + "' must hold an absolute path (file:///path)");
  return std::filesystem::path(path).lexically_normal().string();
}

// The last component of a URL's path (without its query), as the name a fetched file gets.
std::string name_in_url(const std::string& url) {
  std::string path = url.substr(url.find("://") + 3);
  path = path.substr(0, path.find_first_of("?#"));
  const auto slash = path.rfind('/');
  const std::string name = slash == std::string::npos ? std::string() : path.substr(slash + 1);
  return safe_relative_name(name) ? name : std::string();
}

// A file of the submitting machine that travels with the job: checked, and its content's
// digest taken (what each relay's cache knows it by).
StagedFile local_file(const std::string& path, StagedFile::Role role, std::string name, const std::string& what,
                      const std::function<void(const std::string&)>& fail) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) fail(what + " '" + path + "' does not exist");
  if (fs::is_directory(path, ec)) fail(what + " '" + path + "' is a directory");
  const bool exec = ::access(path.c_str(), X_OK) == 0;
  if (role == StagedFile::Role::kExecutable && !exec) fail(what + " '" + path + "' is not executable");
  StagedFile s;
  s.role = role;
  s.name = std::move(name);
  s.source = path;
  s.executable = exec;
  try {
    const FileDigest d = digest_of_file(path);
    s.sha256 = d.sha256;
    s.size = d.size;
  } catch (const std::runtime_error& e) { fail(what + ": " + e.what()); }
  return s;
}

// The executable: a file of the submitting machine (carried where the cluster's nodes do not
// see it) or an http(s) URL each relay fetches. Sets spec.executable to its path or URL.
void read_executable(const XmlFile& f, const pugi::xml_node& url_node, const std::string& url, JobSpec& spec,
                     const std::set<std::string>& fetched) {
  const std::string where = local_or_url(f, url_node, url, true, fetched);
  if (where.find("://") != std::string::npos) {
    const std::string name = name_in_url(where);
    if (name.empty()) f.fail(url_node, "URL '" + where + "' does not end in a file name for the executable");
    spec.executable = where;
    spec.files.push_back({StagedFile::Role::kExecutable, name, where, "", 0, true});
    return;
  }
  spec.executable = where;
  spec.files.push_back(local_file(where, StagedFile::Role::kExecutable, std::filesystem::path(where).filename().string(), "executable",
                                  [&](const std::string& why) { f.fail(url_node, why); }));
}

// <stageInOut><file name="NAME" type="in|out"><location type="URL">URL</location></file>...:
// inputs put into the job's directory at each cluster before the processes start, outputs
// brought back from it (into URL/CLUSTER/NAME on the submitting machine) when the job ends.
void read_staged_files(const XmlFile& f, const pugi::xml_node& exec, const Variables& vars, JobSpec& spec,
                       const std::set<std::string>& fetched) {
  std::set<std::string> names;
  for (const auto& s : spec.files) names.insert(s.name);
  for (pugi::xml_node stage : exec.children("stageInOut"))
    for (pugi::xml_node file : stage.children()) {
      if (file.type() != pugi::node_element) continue;
      if (std::string(file.name()) != "file") f.fail(file, "unknown element inside <stageInOut> (expected <file>)");
      const std::string name = substitute(f, file, f.attribute(file, "name"), vars);
      if (!safe_relative_name(name))
        f.fail(file, "file name '" + name + "' must be a relative path inside the job's directory (no '..', not absolute)");
      if (!names.insert(name).second) f.fail(file, "file name '" + name + "' is given twice (or is the executable's)");
      const std::string type = f.attribute(file, "type");
      if (type != "in" && type != "out") f.fail(file, "file type is '" + type + "'; expected in or out");
      const pugi::xml_node location = f.child(file, "location");
      const std::string url = value_of(f, location, vars);
      const auto fail = [&](const std::string& why) { f.fail(location, why); };
      if (type == "in") {
        const std::string where = local_or_url(f, location, url, true, fetched);
        if (where.find("://") != std::string::npos) spec.files.push_back({StagedFile::Role::kInput, name, where, "", 0, false});
        else spec.files.push_back(local_file(where, StagedFile::Role::kInput, name, "input file", fail));
        continue;
      }
      const std::string dir = local_or_url(f, location, url, false);
      std::error_code ec;
      if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
        fail("output location '" + dir + "' is not a directory (outputs come back into DIR/CLUSTER/NAME)");
      spec.files.push_back({StagedFile::Role::kOutput, name, dir, "", 0, false});
    }
}

JobSpec parse(const XmlFile& f, const Variables& vars, const std::set<std::string>& fetched) {
  const pugi::xml_node job = f.doc().child("grmsJob");
  if (!job) {
    const pugi::xml_node root = f.doc().document_element();
    if (!root) throw InputError(f.path() + ":1:1: empty document; expected <grmsJob>");
    f.fail(root, "the root element must be <grmsJob>");
  }
  JobSpec spec;
  spec.app_id = f.attribute(job, "appId");
  const pugi::xml_node task = f.child(job, "task");
  spec.task_id = f.attribute(task, "taskId");

  // Logical topology: groups, then how many processes each holds.
  const pugi::xml_node topology = f.child(f.child(task, "resourcesDescription"), "topology");
  std::map<std::string, pugi::xml_node> declared;
  for (pugi::xml_node g : topology.children("group")) {
    const std::string id = f.attribute(g, "groupId");
    if (declared.count(id)) f.fail(g, "group '" + id + "' is declared twice");
    declared[id] = g;
    spec.groups.push_back({id, 0});
  }
  if (spec.groups.empty()) f.fail(topology, "no <group> declared; a job needs at least one");
  for (pugi::xml_node p : topology.children("processes")) {
    const pugi::xml_node ref = f.child(p, "groupIdReference");
    const std::string id = f.attribute(ref, "groupId");
    if (!declared.count(id)) f.fail(ref, "reference to undefined group '" + id + "'");
    for (auto& g : spec.groups) {
      if (g.name != id) continue;
      if (g.count != 0) f.fail(p, "group '" + id + "' is given processes twice");
      g.count = count_of(f, p, vars);
    }
  }
  for (const auto& g : spec.groups)
    if (g.count == 0) f.fail(declared[g.name], "group '" + g.name + "' has no processes (add a <processes> element for it)");
  if (spec.total_processes() > kMaxJobProcesses)
    f.fail(topology, "the groups hold " + std::to_string(spec.total_processes()) + " processes, more than MPI can number (" +
                         std::to_string(kMaxJobProcesses) + ")");

  // Execution: the executable, its arguments, environment and working directory.
  const pugi::xml_node exec = f.child(task, "execution");
  f.attribute(exec, "type");
  const pugi::xml_node url = f.child(f.child(f.child(f.child(exec, "executable"), "execFile"), "file"), "url");
  read_executable(f, url, value_of(f, url, vars), spec, fetched);
  read_staged_files(f, exec, vars, spec, fetched);
  if (exec.child("processesCount")) {
    const std::uint32_t n = count_of(f, exec, vars);
    if (n != spec.total_processes())
      f.fail(exec.child("processesCount"),
             "execution asks for " + std::to_string(n) + " processes but the groups hold " + std::to_string(spec.total_processes()));
  }
  for (pugi::xml_node args : exec.children("arguments"))
    for (pugi::xml_node v : args.children())
      if (v.type() == pugi::node_element) {
        if (std::string(v.name()) != "value") f.fail(v, "unknown element inside <arguments> (expected <value>)");
        spec.args.push_back(substitute(f, v, v.child_value(), vars));
      }
  for (pugi::xml_node env : exec.children("environment"))
    for (pugi::xml_node v : env.children())
      if (v.type() == pugi::node_element) {
        if (std::string(v.name()) != "variable") f.fail(v, "unknown element inside <environment> (expected <variable>)");
        const std::string name = f.attribute(v, "name");
        if (name.find('=') != std::string::npos) f.fail(v, "variable name '" + name + "' contains '='");
        spec.env.emplace_back(name, substitute(f, v, v.child_value(), vars));
      }
  if (pugi::xml_node loss = exec.child("onClusterLoss")) {
    const std::string v = value_of(f, loss, vars);
    if (v != "stop" && v != "continue") f.fail(loss, "onClusterLoss is '" + v + "'; expected stop or continue");
    spec.survive_cluster_loss = v == "continue";
  }
  if (pugi::xml_node wd = exec.child("workingDirectory")) {
    for (const auto& s : spec.files)
      if (s.role != StagedFile::Role::kExecutable)
        f.fail(wd,
               "a job with <stageInOut> files runs in its own directory at each cluster, where they are put and "
               "found: remove <workingDirectory>");
    spec.workdir = value_of(f, wd, vars);
    std::error_code ec;  // a too long name, say, is an error here, not an exception
    if (!std::filesystem::is_directory(spec.workdir, ec))
      f.fail(wd, "working directory '" + spec.workdir + "' " +
                     (ec && ec != std::errc::no_such_file_or_directory ? "cannot be used: " + ec.message() : "does not exist"));
  }
  return spec;
}

}  // namespace

JobSpec load_job_profile(const std::string& path, const Variables& vars, const std::set<std::string>& fetched) {
  XmlFile f(path);
  return parse(f, vars, fetched);
}

JobSpec parse_job_profile(const std::string& path, const std::string& text, const Variables& vars, const std::set<std::string>& fetched) {
  XmlFile f(path, &text);
  return parse(f, vars, fetched);
}

}  // namespace gridrt

namespace gridrt {

JobSpec command_job(const std::string& program, const std::vector<std::string>& args, long processes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string path = program;
  if (program.find('/') == std::string::npos) {  // on PATH, as a shell (and mpiexec) would find it
    path = find_on_path(program);
    if (path.empty()) throw InputError("program '" + program + "': not found on PATH");
  }
  const fs::path abs = fs::absolute(path, ec);
  if (ec || !fs::exists(abs, ec)) throw InputError("program '" + program + "' does not exist");
  if (fs::is_directory(abs, ec)) throw InputError("program '" + program + "' is a directory");
  if (::access(abs.c_str(), X_OK) != 0) throw InputError("program '" + program + "' is not executable");
  if (processes < 1 || processes > 1000000) throw InputError("-n takes a number of processes from 1 to 1000000");
  JobSpec spec;
  spec.app_id = abs.filename().string();
  spec.task_id = spec.app_id;
  spec.groups.push_back({spec.app_id, static_cast<std::uint32_t>(processes)});
  spec.executable = abs.lexically_normal().string();
  spec.files.push_back(local_file(spec.executable, StagedFile::Role::kExecutable, spec.app_id, "program",
                                  [&](const std::string& why) { throw InputError(why); }));
  spec.args = args;
  spec.workdir = fs::current_path(ec).string();
  spec.workdir_is_submitters = true;
  return spec;
}

void set_environment(JobSpec& spec, const std::string& name, const std::string& value) {
  for (auto& [k, v] : spec.env)
    if (k == name) {
      v = value;
      return;
    }
  spec.env.emplace_back(name, value);
}

}  // namespace gridrt
