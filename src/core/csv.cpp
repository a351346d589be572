#include "core/csv.h"

#include <cmath>
#include <stdexcept>

#include "core/error.h"

namespace dnncast {

std::string csv_quote(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string quoted = "\"";
  for (char c : field) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

bool read_key_value_record(std::istream& in, const std::string& path, std::vector<std::string>& fields, int64_t& line,
                           double& value, std::string& where) {
  while (read_csv_record(in, fields, line)) {
    if (fields.empty() || fields[0].empty() || fields[0][0] == '#' || fields[0] == "key") continue;
    where = path + " line " + std::to_string(line);
    if (fields.size() < 2) throw InputError(where + ": expected key,value,detail");
    try {
      size_t used = 0;
      value = std::stod(fields[1], &used);
      if (used != fields[1].size() || !std::isfinite(value) || value < 0) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw InputError(where + ": " + quote(fields[1]) + " is not a non-negative number");
    }
    return true;
  }
  return false;
}

void write_csv_record(std::ostream& out, const std::vector<std::string>& fields) {
  for (size_t col = 0; col < fields.size(); ++col) out << (col ? "," : "") << csv_quote(fields[col]);
  out << "\n";
}

bool read_csv_record(std::istream& in, std::vector<std::string>& fields, int64_t& line) {
  fields.clear();
  if (in.peek() == std::char_traits<char>::eof()) return false;
  std::string field;
  bool quoted = false, was_quoted = false;
  const int64_t start_line = line + 1;
  for (;;) {
    int next = in.get();
    if (next == std::char_traits<char>::eof()) {
      if (quoted) throw InputError("line " + std::to_string(start_line) + ": unterminated quoted field");
      break;
    }
    char c = static_cast<char>(next);
    if (quoted) {
      if (c != '"') {
        if (c == '\n') ++line;
        field += c;
      } else if (in.peek() == '"') {  // "" inside quotes: one quote
        field += '"';
        in.get();
      } else {
        quoted = false;
      }
    } else if (c == '"' && field.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == ',') {
      fields.push_back(field);
      field.clear();
      was_quoted = false;
    } else if (c == '\n') {
      break;
    } else if (c != '\r') {  // CRLF ends a record as LF does; a CR outside quotes is dropped
      field += c;
    }
  }
  ++line;
  fields.push_back(field);
  return true;
}

}  // namespace dnncast
