// hangdx/base/rank_set.h
// Compact printing of rank sets as ranges, so that 1,024 ranks fit on a line:
//   FormatRanks({0,1,2,3,5,7,8,9}) == "0-3,5,7-9"
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hangdx {

// Formats global ranks as comma-separated ranges. Input in any order, may hold
// duplicates; output is sorted and deduplicated. Empty input gives "".
std::string FormatRanks(std::vector<int64_t> ranks);

// The same for sentences: "rank 3" or "ranks 0-2,5"; duplicates count once.
// A set whose text runs past 60 characters is cut at a range boundary:
// "ranks 0-99,101-...,... (900 ranks)" (full sets belong in the roles).
std::string RankWords(std::vector<int64_t> ranks);

// A count with its noun in the right number: Count(1, "seq", "seqs") is
// "1 seq", Count(3, "seq", "seqs") is "3 seqs".
std::string Count(int64_t n, const char* one, const char* many);

// Parses "0-3,5,7-9" back into sorted ranks. Returns false (and leaves *out
// partial) on malformed text or a range wider than `max_count` ranks.
bool ParseRanks(const std::string& text, std::vector<int64_t>* out, int64_t max_count = 10'000'000);

}  // namespace hangdx
