#include "common/xml.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gridrt {

XmlFile::XmlFile(std::string path, const std::string* text) : path_(std::move(path)) {
  if (text) {
    buffer_ = *text;
  } else {
    std::ifstream in(path_, std::ios::binary);
    if (!in) throw InputError(path_ + ": cannot read the file: " + std::strerror(errno));
    std::ostringstream os;
    os << in.rdbuf();
    buffer_ = os.str();
  }
  line_starts_.push_back(0);
  for (std::size_t i = 0; i < buffer_.size(); ++i)
    if (buffer_[i] == '\n') line_starts_.push_back(i + 1);
  const pugi::xml_parse_result r = doc_.load_buffer(buffer_.data(), buffer_.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!r) throw InputError(location(r.offset) + ": malformed XML: " + r.description());
}

std::string XmlFile::location(std::ptrdiff_t offset) const {
  const auto pos = static_cast<std::size_t>(std::max<std::ptrdiff_t>(offset, 0));
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
  const std::size_t line = static_cast<std::size_t>(it - line_starts_.begin());
  const std::size_t col = pos - line_starts_[line - 1] + 1;
  return path_ + ":" + std::to_string(line) + ":" + std::to_string(col);
}

std::string XmlFile::where(const pugi::xml_node& n) const {
  // offset_debug() points past '<' of an element; step back so the column names the '<'.
  std::ptrdiff_t off = n.offset_debug();
  if (n.type() == pugi::node_element && off > 0) --off;
  return location(off);
}

std::string XmlFile::element_path(const pugi::xml_node& n) {
  std::string p;
  for (pugi::xml_node x = n; x && x.type() == pugi::node_element; x = x.parent()) p = "/" + std::string(x.name()) + p;
  return p.empty() ? "/" : p;
}

void XmlFile::fail(const pugi::xml_node& n, const std::string& what) const {
  throw InputError(where(n) + ": <" + std::string(n.name()) + "> (" + element_path(n) + "): " + what);
}

pugi::xml_node XmlFile::child(const pugi::xml_node& parent, const char* name) const {
  pugi::xml_node c = parent.child(name);
  if (!c) fail(parent, std::string("missing element <") + name + ">");
  if (c.next_sibling(name)) fail(c.next_sibling(name), std::string("<") + name + "> given twice");
  return c;
}

std::string XmlFile::attribute(const pugi::xml_node& n, const char* name) const {
  const pugi::xml_attribute a = n.attribute(name);
  if (!a || !*a.value()) fail(n, std::string("missing attribute ") + name);
  return a.value();
}

std::string XmlFile::text(const pugi::xml_node& n) const {
  std::string t = n.child_value();
  const auto b = t.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) fail(n, "empty; a value is required");
  t = t.substr(b, t.find_last_not_of(" \t\r\n") - b + 1);
  return t;
}

std::uint32_t parse_count(const XmlFile& f, const pugi::xml_node& n, const std::string& value) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno == ERANGE) f.fail(n, "'" + value + "' is not a number");
  if (v <= 0) f.fail(n, "count must be at least 1, got " + value);
  if (v > 1'000'000) f.fail(n, "count " + value + " is larger than 1000000");
  return static_cast<std::uint32_t>(v);
}

}  // namespace gridrt
