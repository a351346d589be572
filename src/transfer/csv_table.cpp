// Plain CSV files as option tables (transfer.h read_csv_table).
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>

#include "core/csv.h"
#include "core/error.h"
#include "transfer/transfer.h"

namespace dnncast::transfer {

namespace {

// The next record that is not blank and not a comment (a line starting with '#'); false at the end.
// `line` counts physical lines; `record_line` is where the record starts.
bool next_record(std::istream& in, const std::string& path, std::vector<std::string>& fields, int64_t& line,
                 int64_t& record_line) {
  for (;;) {
    if (in.peek() == '#') {
      std::string comment;
      std::getline(in, comment);
      ++line;
      continue;
    }
    record_line = line + 1;
    try {
      if (!read_csv_record(in, fields, line)) return false;
    } catch (const InputError& error) {
      throw error.with_context(quote(path));
    }
    if (!(fields.size() == 1 && fields[0].empty())) return true;
  }
}

bool parse_number(const std::string& text, double& value) {
  if (text.empty()) return false;
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(value);
}

}  // namespace

OptionTable read_csv_table(const std::string& path, const std::vector<std::string>& options,
                           const std::string& metric) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot open CSV file " + quote(path));
  if (options.empty()) throw InputError("no option columns given for " + quote(path));
  int64_t line = 0, line_number = 0;
  std::vector<std::string> header;
  if (!next_record(in, path, header, line, line_number)) throw InputError(quote(path) + " has no header line");
  std::map<std::string, size_t> column_of;
  for (size_t k = 0; k < header.size(); ++k) column_of[header[k]] = k;
  auto find = [&](const std::string& name, const char* what) {
    auto found = column_of.find(name);
    if (found == column_of.end()) {
      std::string known;
      for (const std::string& column : header) known += (known.empty() ? "" : ", ") + column;
      throw InputError(quote(path) + " has no " + what + " column " + quote(name) + " (columns: " + known + ")");
    }
    return found->second;
  };
  std::vector<size_t> option_columns;
  for (const std::string& option : options) option_columns.push_back(find(option, "option"));
  size_t metric_column = find(metric, "metric");

  std::vector<std::vector<double>> rows;
  std::vector<double> targets;
  std::vector<std::string> fields;
  while (next_record(in, path, fields, line, line_number)) {
    if (fields.size() != header.size())
      throw InputError(quote(path) + " line " + std::to_string(line_number) + ": " + std::to_string(fields.size()) +
                       " fields, the header has " + std::to_string(header.size()));
    std::vector<double> row;
    for (size_t k = 0; k < options.size(); ++k) {
      double value = 0;
      if (!parse_number(fields[option_columns[k]], value))
        throw InputError(quote(path) + " line " + std::to_string(line_number) + ": option '" + options[k] +
                         "' is not a number: '" + fields[option_columns[k]] + "'");
      row.push_back(value);
    }
    double target = 0;
    if (!parse_number(fields[metric_column], target) || !(target > 0))
      throw InputError(quote(path) + " line " + std::to_string(line_number) + ": metric '" + metric +
                       "' must be a positive number, got " + quote(fields[metric_column]));
    rows.push_back(row);
    targets.push_back(target);
  }
  if (rows.empty()) throw InputError(quote(path) + " has no data rows");
  OptionTable table;
  table.name = path;
  table.options = options;
  table.x.resize(static_cast<int64_t>(rows.size()), static_cast<int64_t>(options.size()));
  table.y.resize(static_cast<int64_t>(rows.size()));
  for (size_t r = 0; r < rows.size(); ++r) {
    for (size_t c = 0; c < options.size(); ++c) table.x(static_cast<int64_t>(r), static_cast<int64_t>(c)) = rows[r][c];
    table.y(static_cast<int64_t>(r)) = targets[r];
  }
  return table;
}

}  // namespace dnncast::transfer
