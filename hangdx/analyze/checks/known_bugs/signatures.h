// hangdx/analyze/checks/known_bugs/signatures.h
// Known-bug signatures: hangs inside the communication library (or
// PyTorch's use of it) that are recognisable from where a rank's host
// threads are stuck, kept as data (known_bugs.sigs, compiled into the
// binary; its header is the row syntax), one row per bug: the frames that
// must all appear in one thread's stack, the settings the bug needs, the
// library versions it affects, the release that fixed it, the workaround and
// the report it was taken from. The known_bug check (checks/known_bug.h)
// reads them.
//
//   const std::vector<Signature>& sigs = BuiltinSignatures();
//   for (const Signature& s : sigs)
//     if (s.MatchesStack(sample) && s.AffectsVersion(ParseVersion("2.18.1")) != Affects::kNo) ...
//
// Immutable once built; safe to share across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hangdx/base/status.h"
#include "hangdx/model/job.h"

namespace re2 {
class RE2;
}

namespace hangdx::analyze::known_bugs {

// A release number, its numeric components ("2.21.5+cuda12.4" -> 2, 21, 5);
// empty when unknown.
using Version = std::vector<int64_t>;

// The numeric components of the first version in `text` ("2.21.5+cuda12.4",
// "NCCL version 2.18.1", "(2, 21, 5)"), at most three; empty when it holds
// no number.
Version ParseVersion(std::string_view text);

// Whether a version is inside a signature's `affected` range.
enum class Affects { kYes, kNo, kUnknown };

// One row of known_bugs.sigs.
class Signature {
 public:
  std::string id;                   // "nccl-829-abort-stream-synchronize"
  std::string library;              // nccl, rccl, pytorch, hccl: whose versions `affected` and `fixed` are
  std::string affected;             // as written: "2.14-", "2.13-2.16.5", "-2.2", "2.25"
  std::string fixed;                // first release with the fix, or "none"
  std::vector<std::string> frames;  // RE2s, searched in frame names
  std::vector<std::pair<std::string, std::string>> settings;  // NAME, VALUE the bug needs
  bool version_required = false;                              // the frames alone match healthy waits too
  std::string summary, workaround, url;
  std::string stack_file, stack_version;  // the real instance it was taken from (tests)
  int64_t line = 0;                       // 1-based line of its `bug` key in the data

  // True when every frame regex finds a frame name in `s` (order free).
  bool MatchesStack(const model::StackSample& s) const;
  // True when some frame regex finds `f`'s name: one of the frames the
  // signature is about.
  bool NamesFrame(const model::Frame& f) const;
  // Whether `v` (of this row's library) is affected; kUnknown for an empty
  // version.
  Affects AffectsVersion(const Version& v) const;

  // Compiles the frame regexes; an error names the one RE2 refuses.
  Status Compile();

 private:
  std::vector<std::shared_ptr<const re2::RE2>> compiled_;
  Version lo_, hi_;  // the affected range; empty = open on that side
};

// Parses signature rows (`name` is used in error messages). Errors
// (kInvalidArgument, naming file and line): an unknown key, a row without
// bug, library, affected, fixed, a frame, summary, workaround or url, a
// repeated single key, a duplicate id, an unknown library, a setting not
// NAME=VALUE, an affected range or frame RE2 refuses.
StatusOr<std::vector<Signature>> ParseSignatures(std::string_view text, std::string_view name);

// The signatures compiled into the binary. A broken built-in file is a
// build defect that the tests catch; here it gives no signatures and
// BuiltinSignatureErrors() says why.
const std::vector<Signature>& BuiltinSignatures();
const std::vector<std::string>& BuiltinSignatureErrors();

// The built-in data as text, for tests that read it again.
std::string_view BuiltinSignatureText();

}  // namespace hangdx::analyze::known_bugs
