#include "lib/base/yaml_fields.hpp"

#include "lib/base/input_error.hpp"

namespace eth::yaml {

std::string emit(const YAML::Node& node) {
  YAML::Emitter out;
  out.SetDoublePrecision(6);
  out << node;
  return out.c_str();
}

Field load_file(const std::string& path, const std::string& what) {
  try {
    return {YAML::LoadFile(path), path, ""};
  } catch (const YAML::BadFile&) {
    fail_input(path, "file", "a readable " + what + " YAML file", "a file that cannot be opened");
  } catch (const YAML::Exception& e) {
    fail_input(path, "line " + std::to_string(e.mark.line + 1), "valid YAML", e.msg);
  }
}

Field load_text(const std::string& text, const std::string& source) {
  try {
    return {YAML::Load(text), source, ""};
  } catch (const YAML::Exception& e) {
    fail_input(source, "line " + std::to_string(e.mark.line + 1), "valid YAML", e.msg);
  }
}

std::string Field::text() const {
  if (!node) return "nothing (the field is missing)";
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "an empty value";
}

void Field::fail(const std::string& expected, const std::string& got) const {
  fail_input(file, path.empty() ? "top level" : path, expected, got);
}

Field Field::child(const std::string& key) const {
  if (!node || !node.IsMap()) fail("a mapping with '" + key + "'", text());
  return {node[key], file, path.empty() ? key : path + "." + key};
}

bool Field::has(const std::string& key) const { return node && node.IsMap() && node[key]; }

Field Field::at(size_t i) const { return {node[i], file, path + "[" + std::to_string(i) + "]"}; }

size_t Field::size() const {
  if (!node || !node.IsSequence()) fail("a list", text());
  return node.size();
}

int Field::as_int(long long min, long long max) const {
  const std::string range = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (!node || !node.IsScalar()) fail(range, text());
  long long v = 0;
  try {
    v = node.as<long long>();
  } catch (const YAML::Exception&) {
    fail(range, text());
  }
  if (v < min || v > max) fail(range, std::to_string(v));
  return static_cast<int>(v);
}

double Field::as_double(double min) const {
  const std::string range = "a number >= " + std::to_string(min);
  if (!node || !node.IsScalar()) fail(range, text());
  double v = 0;
  try {
    v = node.as<double>();
  } catch (const YAML::Exception&) {
    fail(range, text());
  }
  if (!(v >= min)) fail(range, text());
  return v;
}

std::string Field::as_string() const {
  if (!node || !node.IsScalar() || node.Scalar().empty()) fail("a non-empty string", text());
  return node.Scalar();
}

bool Field::as_bool() const {
  const std::string v = node && node.IsScalar() ? node.Scalar() : "";
  if (v != "true" && v != "false") fail("true or false", text());
  return v == "true";
}

std::vector<int> Field::as_ints(long long min, long long max) const {
  std::vector<int> out;
  for (size_t i = 0; i < size(); i++) out.push_back(at(i).as_int(min, max));
  return out;
}

}  // namespace eth::yaml
