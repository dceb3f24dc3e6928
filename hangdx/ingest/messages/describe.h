// hangdx/ingest/messages/describe.h
// The message catalogue as text for people: the table `hangdx messages`
// prints and docs/field-messages.md (`hangdx messages --markdown`), both
// generated from the rows (catalogue.h), so the documentation cannot drift
// from what hangdx reads; ctest field_messages_doc fails when the committed
// file is out of date.
//
//   std::cout << CatalogueTable(Catalogue::Builtin());
//   std::ofstream("docs/field-messages.md") << CatalogueMarkdown(Catalogue::Builtin());
#pragma once

#include <string>

#include "hangdx/ingest/messages/catalogue.h"

namespace hangdx::ingest::messages {

// One line per row: id, producer, versions, event, reader ("messages" when
// the row has none), aligned in columns, with a header line.
std::string CatalogueTable(const Catalogue& catalogue);

// docs/field-messages.md: per producer family (the first part of the row
// ids: torch, nccl, horovod, ...) an index table, then per row its producer,
// versions, source path, format string, what it proves, its event and rank
// scope, which hangdx reader reads it, and its real instances' URLs.
// Deterministic (catalogue order).
std::string CatalogueMarkdown(const Catalogue& catalogue);

}  // namespace hangdx::ingest::messages
