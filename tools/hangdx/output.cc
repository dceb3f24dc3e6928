#include "tools/hangdx/output.h"

#include <cstdio>
#include <fstream>
#include <iostream>

namespace hangdx::tools {

int WriteOut(const std::string& text, const std::string& output) {
  if (output.empty() || output == "-") {
    // A full disk or a closed pipe must not pass for a report written.
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0) {
      std::cerr << "hangdx: cannot write the report to stdout\n";
      return 2;
    }
    return 0;
  }
  std::ofstream f(output, std::ios::binary);
  f << text;
  if (!f) {
    std::cerr << "hangdx: cannot write " << output << "\n";
    return 2;
  }
  return 0;
}

}  // namespace hangdx::tools
