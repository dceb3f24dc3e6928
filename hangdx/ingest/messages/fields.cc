#include "hangdx/ingest/messages/fields.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace hangdx::ingest::messages {
namespace {

enum class Type { kInt, kHexOrInt, kMs, kMsFromSeconds, kSignal, kExitCode, kString, kList };

struct FieldSpec {
  std::string_view name;
  Type type;
  int64_t MessageFields::*num = nullptr;
  std::string MessageFields::*str = nullptr;
  std::vector<int64_t> MessageFields::*list = nullptr;
};

// The vocabulary: one row per capture name. `timeout_s` and `elapsed_s`
// land in the millisecond fields.
const std::vector<FieldSpec>& Specs() {
  using M = MessageFields;
  static const std::vector<FieldSpec> kSpecs = {
      {"rank", Type::kInt, &M::rank},
      {"pg_rank", Type::kInt, &M::pg_rank},
      {"local_rank", Type::kInt, &M::local_rank},
      {"reporter", Type::kInt, &M::reporter},
      {"world_size", Type::kInt, &M::world_size},
      {"nranks", Type::kInt, &M::nranks},
      {"pg", Type::kString, nullptr, &M::pg},
      {"pg_desc", Type::kString, nullptr, &M::pg_desc},
      {"comm", Type::kString, nullptr, &M::comm},
      {"seq", Type::kInt, &M::seq},
      {"p2p_seq", Type::kInt, &M::p2p_seq},
      {"opcount", Type::kHexOrInt, &M::opcount},
      {"op", Type::kString, nullptr, &M::op},
      {"numel_in", Type::kInt, &M::numel_in},
      {"numel_out", Type::kInt, &M::numel_out},
      {"count", Type::kInt, &M::count},
      {"dtype", Type::kString, nullptr, &M::dtype},
      {"shape", Type::kString, nullptr, &M::shape},
      {"root", Type::kInt, &M::root},
      {"tensor", Type::kString, nullptr, &M::tensor},
      {"peer", Type::kInt, &M::peer},
      {"peer_local", Type::kInt, &M::peer_local},
      {"peer_addr", Type::kString, nullptr, &M::peer_addr},
      {"timeout_ms", Type::kMs, &M::timeout_ms},
      {"timeout_s", Type::kMsFromSeconds, &M::timeout_ms},
      {"elapsed_ms", Type::kMs, &M::elapsed_ms},
      {"elapsed_s", Type::kMsFromSeconds, &M::elapsed_ms},
      {"timestamp", Type::kString, nullptr, &M::timestamp},
      {"ranks", Type::kList, nullptr, nullptr, &M::ranks},
      {"ready_ranks", Type::kList, nullptr, nullptr, &M::ready_ranks},
      {"exit_code", Type::kExitCode},
      {"signal", Type::kSignal, &M::signal},
      {"error", Type::kString, nullptr, &M::error},
      {"host", Type::kString, nullptr, &M::host},
      {"pid", Type::kInt, &M::pid},
      {"device", Type::kString, nullptr, &M::device},
      {"enqueued", Type::kInt, &M::enqueued},
      {"started", Type::kInt, &M::started},
      {"completed", Type::kInt, &M::completed},
      {"setting", Type::kString, nullptr, &M::setting},
      {"value", Type::kString, nullptr, &M::value},
  };
  return kSpecs;
}

const FieldSpec* Find(std::string_view name) {
  for (const auto& s : Specs())
    if (s.name == name) return &s;
  return nullptr;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool ParseInt(std::string_view s, int64_t* v) {
  s = Trim(s);
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v, 10);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

bool ParseHexOrInt(std::string_view s, int64_t* v) {
  s = Trim(s);
  bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  if (hex) s.remove_prefix(2);
  // NCCL prints opCount in hex without 0x ("opCount 1a"): digits a-f mean hex.
  hex = hex || std::any_of(s.begin(), s.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)); });
  if (s.empty()) return false;
  uint64_t u = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), u, hex ? 16 : 10);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || u > static_cast<uint64_t>(INT64_MAX)) return false;
  *v = static_cast<int64_t>(u);
  return true;
}

// "1800", "1800.5", "1.8e3" (a count of `scale`-ths of a second) ->
// milliseconds, rounded down.
bool ParseDuration(std::string_view s, double ms_per_unit, int64_t* ms) {
  s = Trim(s);
  double d = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), d);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !(d >= 0) || d * ms_per_unit > 9.0e15) return false;
  *ms = static_cast<int64_t>(d * ms_per_unit);
  return true;
}

bool ParseSignal(std::string_view s, int64_t* v) {
  static const std::pair<std::string_view, int64_t> kNames[] = {
      {"SIGHUP", 1},   {"SIGINT", 2},   {"SIGQUIT", 3},  {"SIGILL", 4},   {"SIGTRAP", 5},
      {"SIGABRT", 6},  {"SIGBUS", 7},   {"SIGFPE", 8},   {"SIGKILL", 9},  {"SIGUSR1", 10},
      {"SIGSEGV", 11}, {"SIGUSR2", 12}, {"SIGPIPE", 13}, {"SIGALRM", 14}, {"SIGTERM", 15}};
  s = Trim(s);
  for (const auto& [name, n] : kNames)
    if (s == name || (s.size() + 3 == name.size() && name.substr(3) == s)) {
      *v = n;
      return true;
    }
  return ParseInt(s, v) && *v >= 0 && *v < 128;
}

std::string Join(const std::vector<int64_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out;
}

// "[20, 10]", "20,10", "(20, 10)" -> "20,10"; "[[8], [8]]" -> "[8],[8]".
std::string NormalizeShape(std::string_view s) {
  s = Trim(s);
  if (s.size() >= 2 && ((s.front() == '[' && s.back() == ']') || (s.front() == '(' && s.back() == ')'))) {
    s.remove_prefix(1);
    s.remove_suffix(1);
  }
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) out.push_back(c);
  return out;
}

}  // namespace

bool IsKnownField(std::string_view name) { return Find(name) != nullptr; }

const std::vector<std::string_view>& KnownFields() {
  static const std::vector<std::string_view> kNames = [] {
    std::vector<std::string_view> v;
    for (const auto& s : Specs()) v.push_back(s.name);
    return v;
  }();
  return kNames;
}

bool ParseRankList(std::string_view text, std::vector<int64_t>* out) {
  size_t i = 0, start = out->size();
  auto is_sep = [](char c) {
    return c == ',' || c == ' ' || c == '\t' || c == '[' || c == ']' || c == '{' || c == '}' || c == '(' || c == ')' ||
           c == ';';
  };
  while (i < text.size()) {
    if (is_sep(text[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    int64_t a = 0, b = 0;
    if (j == i || !ParseInt(text.substr(i, j - i), &a)) return false;
    b = a;
    if (j < text.size() && text[j] == '-') {
      size_t k = j + 1;
      while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) ++k;
      if (k == j + 1 || !ParseInt(text.substr(j + 1, k - j - 1), &b) || b < a) return false;
      j = k;
    }
    if (static_cast<uint64_t>(b - a) + (out->size() - start) >= kMaxListRanks) return false;
    for (int64_t r = a; r <= b; ++r) out->push_back(r);
    i = j;
  }
  return true;
}

bool SetField(std::string_view name, std::string_view text, MessageFields* f, std::string* error) {
  const FieldSpec* spec = Find(name);
  if (spec == nullptr) {
    *error = "unknown capture name '" + std::string(name) + "'";
    return false;
  }
  auto bad = [&](const char* what) {
    *error = "capture '" + std::string(name) + "' = '" + std::string(text.substr(0, 64)) + "' is not " + what;
    return false;
  };
  int64_t v = -1;
  switch (spec->type) {
    case Type::kInt:
      // -1 is how producers print "none" (PG status "last completed work: -1").
      if (!ParseInt(text, &v) || v < -1) return bad("a non-negative integer");
      break;
    case Type::kHexOrInt:
      if (!ParseHexOrInt(text, &v)) return bad("an integer");
      break;
    case Type::kMs:
      if (!ParseDuration(text, 1, &v)) return bad("a number of milliseconds");
      break;
    case Type::kMsFromSeconds:
      if (!ParseDuration(text, 1000, &v)) return bad("a number of seconds");
      break;
    case Type::kSignal:
      if (!ParseSignal(text, &v)) return bad("a signal");
      break;
    case Type::kExitCode:
      if (!ParseInt(text, &v)) return bad("an exit code");
      if (!f->exit_code) f->exit_code = v;
      return true;
    case Type::kString: {
      std::string& s = f->*(spec->str);
      if (s.empty())
        s = spec->name == "op"      ? NormalizeOpName(Trim(text))
            : spec->name == "shape" ? NormalizeShape(text)
                                    : std::string(Trim(text));
      return true;
    }
    case Type::kList:
      if (!ParseRankList(text, &(f->*(spec->list)))) return bad("a list of ranks");
      return true;
  }
  int64_t& slot = f->*(spec->num);
  if (slot < 0) slot = v;
  return true;
}

void ClearField(std::string_view name, MessageFields* f) {
  const FieldSpec* spec = Find(name);
  if (spec == nullptr) return;
  if (spec->type == Type::kExitCode)
    f->exit_code.reset();
  else if (spec->num != nullptr)
    f->*(spec->num) = -1;
  else if (spec->str != nullptr)
    (f->*(spec->str)).clear();
  else if (spec->list != nullptr)
    (f->*(spec->list)).clear();
}

std::map<std::string, std::string> FieldsToMap(const MessageFields& f) {
  std::map<std::string, std::string> out;
  for (const auto& s : Specs()) {
    if (s.type == Type::kMsFromSeconds) continue;  // shown as the _ms field
    if (s.type == Type::kExitCode) {
      if (f.exit_code) out["exit_code"] = std::to_string(*f.exit_code);
    } else if (s.num != nullptr) {
      if (f.*(s.num) >= 0) out[std::string(s.name)] = std::to_string(f.*(s.num));
    } else if (s.str != nullptr) {
      if (!(f.*(s.str)).empty()) out[std::string(s.name)] = f.*(s.str);
    } else if (s.list != nullptr) {
      if (!(f.*(s.list)).empty()) out[std::string(s.name)] = Join(f.*(s.list));
    }
  }
  return out;
}

std::string NormalizeOpName(std::string_view op) {
  // Lower snake case first: "AllReduce" -> "all_reduce", "ALLREDUCE" -> "allreduce".
  std::string s;
  for (size_t i = 0; i < op.size(); ++i) {
    char c = op[i];
    bool upper = std::isupper(static_cast<unsigned char>(c));
    bool prev_lower = i > 0 && (std::islower(static_cast<unsigned char>(op[i - 1])) ||
                                std::isdigit(static_cast<unsigned char>(op[i - 1])));
    if (upper && prev_lower) s.push_back('_');
    s.push_back(c == '-' || c == ' ' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  for (std::string_view prefix : {"hccl_", "nccl_", "rccl_", "hccl", "nccl", "c10d::", "ncclop_"})
    if (s.size() > prefix.size() && s.compare(0, prefix.size(), prefix) == 0) {
      s.erase(0, prefix.size());
      break;
    }
  // Spellings without word breaks (PyTorch OpType, Horovod, NCCL enums).
  static const std::pair<std::string_view, std::string_view> kAliases[] = {
      {"allreduce", "all_reduce"},
      {"allgather", "all_gather"},
      {"reducescatter", "reduce_scatter"},
      {"alltoall", "all_to_all"},
      {"alltoallv", "all_to_all"},
      {"all_to_allv", "all_to_all"},
      {"alltoall_base", "all_to_all_single"},
      {"all_to_all_base", "all_to_all_single"},
      {"allreduce_coalesced", "allreduce_coalesced"},
      {"allgather_coalesced", "allgather_coalesced"},
      {"_allgather_base", "_allgather_base"},
      {"_reduce_scatter_base", "_reduce_scatter_base"},
      {"allgather_into_tensor_coalesced", "allgather_into_tensor_coalesced"},
      {"reduce_scatter_tensor_coalesced", "reduce_scatter_tensor_coalesced"},
      {"recvanysource", "recv_any_source"},
      {"bcast", "broadcast"},
      {"sendrecv", "send_recv"},
  };
  for (const auto& [from, to] : kAliases)
    if (s == from) return std::string(to);
  return s;
}

}  // namespace hangdx::ingest::messages
