#include "hangdx/base/key_value_rows.h"

namespace hangdx {

Status ReadKeyValueRows(std::string_view text, const std::function<Status(const KeyValueLine&)>& on_line,
                        const std::function<Status()>& on_row_end) {
  bool in_row = false;
  int64_t number = 0;
  for (size_t pos = 0; pos <= text.size();) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty() && line[0] == '#') continue;
    if (line.find_first_not_of(" \t") == std::string_view::npos) {
      if (in_row) HANGDX_RETURN_IF_ERROR(on_row_end());
      in_row = false;
      continue;
    }
    KeyValueLine kv;
    size_t sp = line.find_first_of(" \t");
    kv.key = line.substr(0, sp);
    if (sp != std::string_view::npos) {
      size_t v = line.find_first_not_of(" \t", sp);
      if (v != std::string_view::npos) kv.value = line.substr(v);
    }
    kv.line = number;
    kv.starts_row = !in_row;
    in_row = true;
    HANGDX_RETURN_IF_ERROR(on_line(kv));
  }
  if (in_row) HANGDX_RETURN_IF_ERROR(on_row_end());
  return Status::Ok();
}

}  // namespace hangdx
