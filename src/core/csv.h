// CSV as RFC 4180 writes it: fields separated by commas, records by LF or CRLF; a field in double
// quotes may hold commas, CR, LF and quotes (written twice: ""). Readers of outside files (dataset
// import, option tables) and every writer share these.
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

namespace dnncast {

// Reads one record into `fields`; returns false at the end of input. `line` counts the physical lines
// read so far (start at 0): a record with quoted newlines spans several. A quote opens a quoted field
// only at the start of a field. Throws InputError("line N: unterminated quoted field"), N the line
// the record starts on.
bool read_csv_record(std::istream& in, std::vector<std::string>& fields, int64_t& line);

// The next record of a key,value[,detail] table (data/hardware's gpu_calibration.csv, gpu_memory_calibration.csv):
// blank and '#' records and the "key" header skipped; `value` its second field, a finite non-negative number;
// `where` "PATH line N". False at the end; InputError naming the line for a short record or another value.
bool read_key_value_record(std::istream& in, const std::string& path, std::vector<std::string>& fields, int64_t& line,
                           double& value, std::string& where);

// `field` as one CSV field: unchanged unless it holds a comma, quote, CR or LF, then quoted.
std::string csv_quote(const std::string& field);
// One record: the fields quoted as needed, separated by commas, ended by "\n".
void write_csv_record(std::ostream& out, const std::vector<std::string>& fields);

}  // namespace dnncast
