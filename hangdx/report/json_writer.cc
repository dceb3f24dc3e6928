#include "hangdx/report/json_writer.h"

#include <charconv>

namespace hangdx::report {

namespace {

using J = nlohmann::ordered_json;

// An array of more numbers than this is written on one line: a list of
// 100,000 ranks one per line was most of a large report's bytes.
constexpr size_t kNumbersPerLine = 16;

void Scalar(const J& j, std::string* o) {
  if (j.is_number_integer()) {
    char buf[24];
    auto r = j.is_number_unsigned() ? std::to_chars(buf, buf + sizeof buf, j.get<uint64_t>())
                                    : std::to_chars(buf, buf + sizeof buf, j.get<int64_t>());
    o->append(buf, r.ptr);
    return;
  }
  *o += j.dump(-1, ' ', /*ensure_ascii=*/false, J::error_handler_t::replace);
}

bool AllNumbers(const J& a) {
  for (const J& x : a)
    if (!x.is_number()) return false;
  return true;
}

// nlohmann's dump(2) layout, but a long array of numbers on one line.
void Write(const J& j, size_t indent, std::string* o) {
  if (j.is_object() && !j.empty()) {
    *o += "{\n";
    size_t i = 0;
    for (auto it = j.begin(); it != j.end(); ++it, ++i) {
      o->append(indent + 2, ' ');
      Scalar(J(it.key()), o);
      *o += ": ";
      Write(it.value(), indent + 2, o);
      *o += i + 1 < j.size() ? ",\n" : "\n";
    }
    o->append(indent, ' ');
    *o += '}';
  } else if (j.is_array() && !j.empty()) {
    if (j.size() > kNumbersPerLine && AllNumbers(j)) {
      *o += '[';
      for (size_t i = 0; i < j.size(); ++i) {
        if (i) *o += ',';
        Scalar(j[i], o);
      }
      *o += ']';
      return;
    }
    *o += "[\n";
    for (size_t i = 0; i < j.size(); ++i) {
      o->append(indent + 2, ' ');
      Write(j[i], indent + 2, o);
      *o += i + 1 < j.size() ? ",\n" : "\n";
    }
    o->append(indent, ' ');
    *o += ']';
  } else {
    Scalar(j, o);
  }
}

}  // namespace

std::string WriteJson(const nlohmann::ordered_json& doc) {
  std::string o;
  Write(doc, 0, &o);
  return o + "\n";
}

}  // namespace hangdx::report
