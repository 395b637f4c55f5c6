// Typed field access on yaml-cpp nodes whose every failure is an InputError naming the file
// and the field's full path ("pipelines[1].stages[0].ranks"). The one place YAML is read.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace eth::yaml {

// A node and where it is: file and path, for messages.
struct Field {
  YAML::Node node;
  std::string file;
  std::string path;  // "" for the document root

  Field child(const std::string& key) const;   // required mapping entry
  bool has(const std::string& key) const;
  Field at(size_t i) const;                    // sequence element
  size_t size() const;                         // of a sequence (fails otherwise)

  int as_int(long long min, long long max) const;
  double as_double(double min) const;
  std::string as_string() const;
  bool as_bool() const;                        // true or false
  std::vector<int> as_ints(long long min, long long max) const;

  [[noreturn]] void fail(const std::string& expected, const std::string& got) const;
  std::string text() const;  // the node as written, for "got ..."
};

// YAML text of a node, doubles with 6 significant digits (not 17).
std::string emit(const YAML::Node& node);

// Loads a YAML document; a missing file or a syntax error names the file (and line).
Field load_file(const std::string& path, const std::string& what);
// The same for YAML text received in memory; `source` names it in messages.
Field load_text(const std::string& text, const std::string& source);

}  // namespace eth::yaml
