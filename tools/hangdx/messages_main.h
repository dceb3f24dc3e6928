// tools/hangdx/messages_main.h
// `hangdx messages`: the message catalogue (hangdx/ingest/messages) for
// people. main.cc hands it argv when the first argument is "messages".
#pragma once

namespace hangdx::tools {

// `hangdx messages` lists the catalogue (id, producer, versions, event,
// reader); `--markdown` writes docs/field-messages.md to stdout (or -o
// FILE); `hangdx messages FILE...` shows, per file, each line hangdx
// recognizes with its row, captures and rank, or what the file resembles.
// Returns 0, or 2 on a usage error or when no path exists.
int MessagesMain(int argc, char** argv);

}  // namespace hangdx::tools
