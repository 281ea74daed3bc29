// Reading XML with locations: every error names file:line:column and the element, as users
// of the JobProfile and the grid description need to find their mistake at once.
#pragma once

#include <pugixml.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace gridrt {

// A user input error: the message is complete ("file:line:col: <element>: what is wrong").
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class XmlFile {
 public:
  // Reads and parses `path` (or `text` when given, with `path` used only in messages).
  // Throws InputError for an unreadable file or malformed XML.
  explicit XmlFile(std::string path, const std::string* text = nullptr);
  XmlFile(const XmlFile&) = delete;

  const pugi::xml_document& doc() const { return doc_; }
  const std::string& path() const { return path_; }
  // "file:line:column" of a node.
  std::string where(const pugi::xml_node& n) const;
  // "/grmsJob/task/..." of a node, for messages.
  static std::string element_path(const pugi::xml_node& n);
  [[noreturn]] void fail(const pugi::xml_node& n, const std::string& what) const;
  // The single child element `name` of `parent`; fails when missing (or repeated).
  pugi::xml_node child(const pugi::xml_node& parent, const char* name) const;
  // The attribute `name`, non-empty; fails when missing.
  std::string attribute(const pugi::xml_node& n, const char* name) const;
  // The trimmed text of an element; fails when empty.
  std::string text(const pugi::xml_node& n) const;

 private:
  std::string location(std::ptrdiff_t offset) const;
  std::string path_;
  std::string buffer_;
  pugi::xml_document doc_;
  std::vector<std::size_t> line_starts_;
};

// Parses a positive count; fails naming the element otherwise.
std::uint32_t parse_count(const XmlFile& f, const pugi::xml_node& n, const std::string& value);

}  // namespace gridrt
