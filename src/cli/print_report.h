// Printing a report of `dnncast evaluate` (apps::EvaluationReport or apps::PredictorScore): any type
// with to_json(), markdown() and text().
#pragma once

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"

namespace dnncast::cli {

// A report (apps::EvaluationReport or apps::PredictorScore): its JSON into `json_file` when open
// (--json-out), then JSON, markdown or text on stdout.
template <typename Report>
void print_report(const Report& report, bool as_json, bool markdown, std::ofstream& json_file,
                  const std::string& json_out) {
  if (json_file.is_open()) {
    json_file << report.to_json().dump(2) << "\n";
    json_file.close();
    if (!json_file) throw InputError("cannot write " + json_out);
  }
  if (as_json)
    std::cout << report.to_json().dump(2) << "\n";
  else if (markdown)
    std::cout << report.markdown();
  else
    std::cout << report.text();
}

}  // namespace dnncast::cli
